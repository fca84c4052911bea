"""What an attribute of a capture batch is in each capture mode, where the framework says so.

sglang's graph runners build their capture batch themselves, each for the modes it captures
in: the decode runner (TARGET_VERIFY, DLLM_EXTEND) never hands it ``extend_seq_lens_cpu``, so
the field keeps ForwardBatch's default, None; the draft-extend runners (DRAFT_EXTEND_V2) hand
it a list with one entry per request. The presets say so per mode
(``capture-mode-none-attributes`` / ``capture-mode-true-attributes``: attribute globs → modes);
in a mode neither names, the attribute is unknown. ``capture_values.py`` asks here after its
every-mode lists (``capture-none-attributes``, ``capture-false-attributes``).
"""

from __future__ import annotations

import re
from functools import cache

from graphlint.checks.facts import ExtractOptions
from graphlint.checks.presets import glob_pattern

Modes = frozenset[str]


def none_in(name: str, options: ExtractOptions, modes: Modes) -> Modes | None:
    """The modes of ``modes`` in which the attribute ``name`` (as read, qualified) is None; None
    unless the tables say, in each of them, whether it is."""
    none, true = _listed(name, options)
    return modes & none if modes and modes <= none | true else None


def true_in(name: str, options: ExtractOptions, modes: Modes) -> Modes | None:
    """The modes of ``modes`` in which the attribute ``name`` is true (None is false); None
    unless the tables say, in each of them, which it is."""
    none, true = _listed(name, options)
    return modes & true if modes and modes <= none | true else None


def _listed(name: str, options: ExtractOptions) -> tuple[Modes, Modes]:
    """The modes the attribute is listed None in, and those it is listed true in (a mode listed
    both ways is in neither: unknown)."""
    none = _modes_of(name, options.capture_mode_none_attributes)
    true = _modes_of(name, options.capture_mode_true_attributes)
    return none - true, true - none


def _modes_of(name: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> Modes:
    if not table:
        return frozenset()
    return frozenset().union(*(listed for pattern, listed in _patterns(table) if pattern.match(name)))


@cache
def _patterns(table: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[tuple[re.Pattern[str], Modes], ...]:
    return tuple((glob_pattern(glob), frozenset(listed)) for glob, listed in table)
