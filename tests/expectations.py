"""Read what a sample says it must produce, from comment lines at the top of the file.

    # expect-check: GL201@14 GL203@20          static findings, exactly these (code@line); "none"
    # expect-trace: verdict=capture GL201@14   trace verdict layer ("none" when all pass), then
                                               code@line of trace findings that must be present
    # expect-copies: clone=2 copy_=1           aten copy counts, exactly these ops; "none"
    # expect-ranks: GD005=1 GD003=1,2          multi-rank runs: the ranks the finding with that
                                               code names, exactly

A line may repeat a key; its entries are added up. Tests use these so that a sample and the
assertion about it live in one place.

Where a sample's true behaviour differs between torch releases, a line may name the release
lines it holds on, ``# expect-trace[torch 2.14]: verdict=dynamo GB6053@21``: on those, the key's
lines so qualified replace its unqualified ones (the same holds for any ``# key: body`` line read
with ``header_lines``, e.g. ``# trace-only[torch 2.6 2.8]: ...``).
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass, field
from pathlib import Path

_HEADER = re.compile(r"^#\s*(?P<key>[a-z][\w-]*)(?:\[torch (?P<releases>[0-9. ]+)\])?:\s*(?P<body>.*)$")
_KEYS = ("expect-check", "expect-trace", "expect-copies", "expect-ranks")
_CODE_AT_LINE = re.compile(r"^(?P<code>[A-Z]+[0-9]+)@(?P<line>\d+)$")


@dataclass
class Expectations:
    check: set[tuple[str, int]] | None = None
    trace_verdict: str | None = None  # None: not stated; "none": every stage passes
    trace_findings: set[tuple[str, int]] = field(default_factory=set)
    copies: dict[str, int] | None = None
    ranks: dict[str, set[int]] = field(default_factory=dict)  # finding code → the ranks it names


def torch_release_line() -> str:
    """The running torch's X.Y, e.g. "2.6"."""
    return ".".join(importlib.metadata.version("torch").split(".")[:2])


def header_lines(path: Path, keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """(key, body) of each ``# key: body`` comment line of ``path`` that holds on the running
    torch: a key's lines qualified with its release line where it has any, else its plain ones."""
    release = torch_release_line()
    plain: list[tuple[str, str]] = []
    qualified: list[tuple[str, str]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        m = _HEADER.match(raw.strip())
        if not m or m["key"] not in keys:
            continue
        if m["releases"] is None:
            plain.append((m["key"], m["body"]))
        elif release in m["releases"].split():
            qualified.append((m["key"], m["body"]))
    replaced = {key for key, _ in qualified}
    return [(k, b) for k, b in plain if k not in replaced] + qualified


def read_expectations(path: Path) -> Expectations:
    exp = Expectations()
    for header, body in header_lines(path, _KEYS):
        key, words = header.removeprefix("expect-"), body.split()
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
