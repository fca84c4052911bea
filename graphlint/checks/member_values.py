"""Whether a value known to be one of some enum members equals another: what a capture's
``capture-call-results`` decide, asked by the walk (``capture_values.py``) and, with no parser
loaded, by the regions walk (``element_conditions.py``)."""

from __future__ import annotations


def equal_in(results: frozenset[str] | None, member: str, modes: frozenset[str]) -> frozenset[str] | None:
    """Where a value known to be one of ``results`` equals ``member``: in every mode where it can
    be nothing else, in none where ``member`` is another member of the class of one of them
    (``AttnForwardMethod.MHA`` beside ``AttnForwardMethod.MLA``; None, ``"None"`` among the
    results, equals neither); None where the names do not say (another class, another spelling
    of it)."""
    if results is None:
        return None
    if member in results:
        return modes if results == {member} else None
    owner = member.rpartition(".")[0]
    return frozenset() if any(value.rpartition(".")[0] == owner for value in results) else None
