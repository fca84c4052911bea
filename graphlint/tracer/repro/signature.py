"""What a repro compares: the signature of a failure, and the exit status it gives.

A signature is the layer, the kind of failure (an exception type, a capture code, ``mismatch``)
and where (an aten op, a GBxxxx code, a function). A repro exits 1 while it sees its signature,
0 when the layer runs clean, and 2 when the layer fails some other way or the repro itself cannot
run (for ``git bisect``, a commit to look at by hand; an uncaught exception would exit 1, the
status of "reproduced"). A repro made from a layer that passed has no signature: any failure
of the layer is then the one it looks for.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

REPRODUCED, GONE, OTHER = 1, 0, 2


@dataclass(frozen=True)
class Signature:
    layer: str
    kind: str | None = None  # exception type name, capture code, "mismatch"
    where: str | None = None  # aten op, GB code, function name

    def __str__(self) -> str:
        return " ".join(p for p in (self.layer, self.kind, f"at {self.where}" if self.where else None) if p)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def finish(expected: dict[str, Any] | None, observed: Signature | None) -> int:
    """Print what happened and return the exit status of the repro."""
    wanted = Signature(**expected) if expected else None
    if observed is None:
        print(f"gone: {wanted} does not happen any more" if wanted else "clean: the layer runs without a failure")
        return GONE
    if wanted is None or observed == wanted:
        print(f"reproduced: {observed}")
        return REPRODUCED
    print(f"other failure: {observed} (this repro looks for {wanted})")
    return OTHER


def cannot_run(exc: BaseException) -> int:
    """The exit status of a repro that could not even run its check (an input it cannot build,
    an API gone from this torch): another failure, never "reproduced"."""
    import sys
    import traceback

    traceback.print_exception(exc, file=sys.stderr)
    print(f"other failure: the repro cannot run here ({type(exc).__name__}: {exc})")
    return OTHER
