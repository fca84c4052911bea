"""Compare a copies report with an earlier one (``--baseline OLD.json``), per op and per line.

The baseline may be the JSON of ``graphlint copies --format json`` or a whole trace report
(``graphlint trace --format json``), whose ``copies`` field is used. Levels present in only one
of the two (GE counts exist only where torchair ran) are not compared.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

LEVELS = ("aten", "ge")


class BaselineError(Exception):
    """The baseline file cannot be used; the message is meant for the user."""


def load_baseline(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("copies"), dict):
        data = data["copies"]  # a whole trace report
    if not isinstance(data, dict) or not isinstance(data.get("aten", {}), (dict, type(None))):
        raise BaselineError(
            f"baseline {path} is not a copies report: write one with "
            "`graphlint copies TARGET --format json --output OLD.json`"
        )
    return data


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``{"levels": [...], "totals": [{"level", "old", "new", "change"}], "ops": [{"level", "op",
    "old", "new", "change"}], "lines": [{"level", "file", "line", "op", "old", "new", "change"}]
    (changed lines only), "grew": bool}``. ``grew`` is true when a compared level has more copies
    in all than before: trading one copy for another (a scatter of the whole buffer for a clone
    of a slice) is not growth, an added ``.contiguous()`` is."""
    levels = [lv for lv in LEVELS if isinstance(old.get(lv), dict) and isinstance(new.get(lv), dict)]
    ops = []
    for level in levels:
        for op in sorted(set(old[level]) | set(new[level])):
            before, after = _count(old[level].get(op)), _count(new[level].get(op))
            if before or after:
                ops.append({"level": level, "op": op, "old": before, "new": after, "change": after - before})
    old_lines, new_lines = _lines(old, levels), _lines(new, levels)
    lines = [
        {"level": key[0], "file": key[1], "line": key[2], "op": key[3],
         "old": old_lines[key], "new": new_lines[key], "change": new_lines[key] - old_lines[key]}
        for key in sorted(set(old_lines) | set(new_lines), key=_line_key)
        if old_lines[key] != new_lines[key]
    ]
    totals = []
    for level in levels:
        before = sum(o["old"] for o in ops if o["level"] == level)
        after = sum(o["new"] for o in ops if o["level"] == level)
        totals.append({"level": level, "old": before, "new": after, "change": after - before})
    return {
        "levels": levels, "totals": totals, "ops": ops, "lines": lines,
        "grew": any(t["change"] > 0 for t in totals),
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _lines(report: dict[str, Any], levels: list[str]) -> Counter[tuple[Any, ...]]:
    counts: Counter[tuple[Any, ...]] = Counter()
    for entry in report.get("by_line") or []:
        if not isinstance(entry, dict):
            continue
        level = entry.get("level", "aten")  # the design's minimal by_line has no level
        if level in levels:
            counts[(level, entry.get("file"), entry.get("line"), entry.get("op"))] += _count(entry.get("count"))
    return counts


def _line_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    level, file, line, op = key
    return (level, str(file or ""), line if isinstance(line, int) else 0, str(op))
