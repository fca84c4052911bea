"""Read dynamo's graph-break reports: the GBxxxx code, the reason, and the user's line.

Dynamo logs each graph break on the ``graph_breaks`` artifact logger as
"Graph break in user code at FILE:LINE / Graph Break Reason: ... / User code traceback: ..."
(or a shorter "user stack suppressed" form for a repeat). The code comes from the message's
link to the graph-break site (``.../gb/gb0170.html``), else from matching the registry's
``Gb_type`` names (``torch/_dynamo/graph_break_registry.json``, present in torch ≥ 2.7).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from graphlint.tracer.locate import frames_of_stack_trace, pick_user_frame

_SITE_LINK = re.compile(r"/gb/gb(?P<num>\d{4})\.html")
_AT_LINE = re.compile(r"in user code at (?P<file>.+?):(?P<line>\d+)\s*$", re.MULTILINE)
_REASON = re.compile(r"Graph Break Reason: (?P<reason>.*?)(?:\n\s*\n User code traceback:|\Z)", re.DOTALL)
_EXPLANATION = re.compile(r"^\s*Explanation: (?P<text>.+)$", re.MULTILINE)


@functools.cache
def graph_break_registry() -> dict[str, str]:
    """``Gb_type`` → code, from the registry file of the installed torch (empty when absent)."""
    import torch._dynamo

    path = Path(torch._dynamo.__file__).with_name("graph_break_registry.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {entry["Gb_type"]: code for code, entries in data.items() for entry in entries}


def graph_break_code(text: str, gb_type: str | None = None) -> str | None:
    """The GBxxxx code of a graph break, from its message or its ``gb_type``."""
    if gb_type and gb_type in graph_break_registry():
        return graph_break_registry()[gb_type]
    links = _SITE_LINK.findall(text)
    if links:
        return f"GB{links[0]}"
    for line in text.splitlines():
        code = graph_break_registry().get(line.strip())
        if code:
            return code
    return None


@dataclass
class GraphBreak:
    code: str | None
    reason: str  # first lines of dynamo's reason: what it could not trace
    file: str | None
    line: int | None


def graph_break_of_log(message: str, user_files: set[str]) -> GraphBreak:
    """One ``graph_breaks`` log message → its code, reason and the user's innermost line."""
    reason_match = _REASON.search(message)
    reason_text = reason_match["reason"] if reason_match else message
    frames = frames_of_stack_trace(message.split("User code traceback:", 1)[-1])
    at = _AT_LINE.search(message)
    if at:
        frames.append((at["file"], int(at["line"])))
    where = pick_user_frame(frames, user_files)
    return GraphBreak(
        code=graph_break_code(reason_text),
        reason=summarise_reason(reason_text),
        file=where[0] if where else None,
        line=where[1] if where else None,
    )


def summarise_reason(reason_text: str) -> str:
    """"<gb_type>: <explanation>" from dynamo's long reason text."""
    lines = [line.strip() for line in reason_text.strip().splitlines() if line.strip()]
    title = next((l for l in lines if l in graph_break_registry()), lines[0] if lines else "graph break")
    explanation = _EXPLANATION.search(reason_text)
    return f"{title}: {explanation['text'].strip()}" if explanation else title
