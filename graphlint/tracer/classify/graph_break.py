"""Read dynamo's graph-break reports: the GBxxxx code, what it means, the reason, the user's line.

Dynamo logs each graph break on the ``graph_breaks`` artifact logger as
"Graph break in user code at FILE:LINE / Graph Break Reason: ... / User code traceback: ..."
(torch 2.6 and 2.7 write ``Reason:``; a repeat may have a shorter "user stack suppressed" form).
The code comes from the message's link to the graph-break site (``.../gb/gb0170.html``), else
from matching the registry's ``Gb_type`` names (``torch/_dynamo/graph_break_registry.json``,
present in torch ≥ 2.7), else from graphlint's own table (``graph_breaks.toml``), which also says
what the break means.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from graphlint.tomlfile import read_toml
from graphlint.tracer.locate import frames_of_stack_trace, pick_user_frame

_SITE_LINK = re.compile(r"/gb/gb(?P<num>\d{4})\.html")
_AT_LINE = re.compile(r"in user code at (?P<file>.+?):(?P<line>\d+)\s*$", re.MULTILINE)
_REASON = re.compile(
    r"^(?:Graph Break )?Reason: (?P<reason>.*?)(?:\n\s*User code traceback:|\Z)",
    re.DOTALL | re.MULTILINE,
)
MEANINGS_FILE = Path(__file__).with_name("graph_breaks.toml")
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


@dataclass(frozen=True)
class BreakMeaning:
    meaning: str
    codes: tuple[str, ...]
    reason: re.Pattern[str]


@functools.cache
def break_meanings(path: Path = MEANINGS_FILE) -> tuple[BreakMeaning, ...]:
    data = read_toml(path)
    return tuple(
        BreakMeaning(e["meaning"], tuple(e["codes"]), re.compile(e["reason"], re.IGNORECASE))
        for e in data["graph_break"]
    )


def codes_of_meaning(meaning: str | None) -> tuple[str, ...]:
    """Every code torch releases give a break of this meaning (none for an unknown meaning)."""
    return next((known.codes for known in break_meanings() if known.meaning == meaning), ())


def classify_graph_break(text: str, gb_type: str | None = None) -> tuple[str | None, str | None]:
    """(GBxxxx code, meaning) of a graph break, from its message or its ``gb_type``: the code
    torch names, else graphlint's for what the message says; the meaning when graphlint knows it."""
    code = _torch_code(text, gb_type)
    for known in break_meanings():
        if (code is None or code in known.codes) and known.reason.search(text):
            return code or known.codes[0], known.meaning
    return code, None


def graph_break_code(text: str, gb_type: str | None = None) -> str | None:
    """The GBxxxx code of a graph break, from its message or its ``gb_type``."""
    return classify_graph_break(text, gb_type)[0]


def _torch_code(text: str, gb_type: str | None) -> str | None:
    """The code torch itself gives: its registry's for ``gb_type``, the site link, a registry name."""
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
    meaning: str | None  # graphlint's name for what it means (graph_breaks.toml), when known
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
    code, meaning = classify_graph_break(reason_text)
    return GraphBreak(
        code=code,
        meaning=meaning,
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
