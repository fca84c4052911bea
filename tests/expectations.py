"""Read what a sample says it must produce, from comment lines at the top of the file.

    # expect-check: GL201@14 GL203@20          static findings, exactly these (code@line); "none"
    # expect-trace: verdict=capture GL201@14   trace verdict layer ("none" when all pass), then
                                               code@line of trace findings that must be present
    # expect-copies: clone=2 copy_=1           aten copy counts, exactly these ops; "none"
    # expect-ranks: GD005=1 GD003=1,2          multi-rank runs: the ranks the finding with that
                                               code names, exactly

A line may repeat a key; its entries are added up. Tests use these so that a sample and the
assertion about it live in one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_LINE = re.compile(r"^#\s*expect-(?P<key>check|trace|copies|ranks):\s*(?P<body>.*)$")
_CODE_AT_LINE = re.compile(r"^(?P<code>[A-Z]+[0-9]+)@(?P<line>\d+)$")


@dataclass
class Expectations:
    check: set[tuple[str, int]] | None = None
    trace_verdict: str | None = None  # None: not stated; "none": every stage passes
    trace_findings: set[tuple[str, int]] = field(default_factory=set)
    copies: dict[str, int] | None = None
    ranks: dict[str, set[int]] = field(default_factory=dict)  # finding code → the ranks it names


def read_expectations(path: Path) -> Expectations:
    exp = Expectations()
    for raw in path.read_text(encoding="utf-8").splitlines():
        m = _LINE.match(raw.strip())
        if not m:
            continue
        key, words = m["key"], m["body"].split()
        if key == "check":
            exp.check = exp.check or set()
            for word in words:
                if word != "none":
                    exp.check.add(_code_at_line(word, path))
        elif key == "trace":
            for word in words:
                if word.startswith("verdict="):
                    exp.trace_verdict = word.split("=", 1)[1]
                else:
                    exp.trace_findings.add(_code_at_line(word, path))
        elif key == "ranks":
            for word in words:
                code, _, ranks = word.partition("=")
                exp.ranks[code] = {int(r) for r in ranks.split(",")}
        else:
            exp.copies = exp.copies or {}
            for word in words:
                if word == "none":
                    continue
                op, _, count = word.partition("=")
                exp.copies[op] = exp.copies.get(op, 0) + int(count)
    return exp


def _code_at_line(word: str, path: Path) -> tuple[str, int]:
    m = _CODE_AT_LINE.match(word)
    if not m:
        raise ValueError(f"{path}: bad expectation {word!r}; write CODE@LINE, e.g. GL201@14")
    return m["code"], int(m["line"])
