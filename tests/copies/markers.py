"""The ``# copies: OP [OP…]`` comments of samples/copies: which copies each line makes, as the
sample's author counted them by hand."""

from __future__ import annotations

import re
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "copies"
_MARKER = re.compile(r"#\s*copies:\s*(?P<ops>[\w ]+)$")


def marked_copies(sample: Path) -> list[tuple[int, str]]:
    """``(line, op)`` once per copy marked, in line order."""
    marked = []
    for number, text in enumerate(sample.read_text(encoding="utf-8").splitlines(), start=1):
        match = _MARKER.search(text)
        if match:
            marked += [(number, op) for op in match["ops"].split()]
    return marked


def lines_of(sample: Path, op: str) -> list[int]:
    return [line for line, marked in marked_copies(sample) if marked == op]
