"""``graphlint explain CODE``: one text for every code graphlint prints.

Static rules document themselves (their class); the tracer's and checker's other codes are in
``codes.toml``; torch's GBxxxx codes are read from the running torch's graph-break registry
(found on disk, torch is never imported). Each answer ends with the knowledge base's hints for
the code, in the language asked for.
"""

from __future__ import annotations

import importlib.util
import json
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from graphlint.codes import CodeEntry, code_entry, graph_break_settings, rule_summary_zh

_GRAPH_BREAK = re.compile(r"^GB\d{4}$", re.IGNORECASE)


class ExplainError(LookupError):
    """The code is unknown, or its source (torch's registry) is not here: one line for the user."""


def explain(code: str, lang: str = "en") -> str:
    """The documentation of ``code`` (a rule's code or slug, a trace code, a GBxxxx code)."""
    from graphlint.checks.docs import explain as explain_rule
    from graphlint.checks.rules import rule_by_code

    rule = rule_by_code(code)
    if rule is not None:
        text = explain_rule(rule.code) or ""
        if lang == "zh":
            summary = rule_summary_zh(rule.code)
            head = f"{rule.code}：{summary}" if summary else f"{rule.code}：暂无中文摘要"
            text = f"{head}\n（规则的详细说明只有英文，如下。）\n\n{text}"
        return text + _hints(rule.code, lang)
    entry = code_entry(code)
    if entry is not None:
        return _entry_text(entry, lang) + _hints(entry.code, lang)
    if _GRAPH_BREAK.match(code):
        return _graph_break_text(code.upper(), lang) + _hints(code.upper(), lang)
    raise ExplainError(f"no code {code!r}: see `graphlint rules` and docs/trace.md for the codes graphlint prints")


def graph_break_link(code: str) -> str:
    """The graph-break site's page of a GBxxxx code."""
    return graph_break_settings()["site"].format(code_lower=code.lower())


def _entry_text(entry: CodeEntry, lang: str) -> str:
    summary = entry.summary.get(lang) or entry.summary["en"]
    body = entry.text.get(lang) or entry.text["en"]
    head = f"{entry.code} ({entry.slug})"
    where = f"printed by: graphlint {entry.command}; layer: {entry.layer}; severity: {entry.severity}"
    return f"{head}\n\n{where}\n\n{summary}\n\n{body}\n\nmore: {entry.doc}\n"


def _graph_break_text(code: str, lang: str) -> str:
    registry = _torch_graph_break_registry()
    entries = registry.get(code)
    link = graph_break_link(code)
    if not entries:
        raise ExplainError(f"{code} is not in torch {version('torch')}'s graph-break registry; see {link}")
    lines = [f"{code} (torch {version('torch')}'s graph-break registry)", ""]
    if lang == "zh":
        lines += ["（torch 的断图说明只有英文。）", ""]
    # A code keeps the entries of its earlier forms, in no order, some of them unrendered source
    # (``_gb_type``, concatenated literals): the one to show is the complete, rendered one.
    entry = max(entries, key=_completeness)
    earlier = sorted({str(e.get("Gb_type", "")) for e in entries} - {str(entry.get("Gb_type", "")), ""})
    lines.append(str(entry.get("Gb_type", "")))
    if entry.get("Explanation"):
        lines += ["", f"Explanation: {entry['Explanation']}"]
    for hint in entry.get("Hints", []):
        lines.append(f"Hint: {str(hint).strip()}")
    if entry.get("Context"):
        lines.append(f"Context: {entry['Context']}")
    if earlier:
        lines.append(f"Also registered as: {'; '.join(earlier)}")
    lines.append("")
    lines.append(f"more: {link}")
    return "\n".join(lines) + "\n"


def _completeness(entry: dict[str, object]) -> tuple[bool, bool, int]:
    rendered = not str(entry.get("Gb_type", "_")).startswith("_") and '"' not in str(entry.get("Explanation", '"'))
    hints = entry.get("Hints")
    return rendered, bool(entry.get("Explanation")), len(hints) if isinstance(hints, list) else 0


def _torch_graph_break_registry() -> dict[str, list[dict[str, object]]]:
    """torch's ``graph_break_registry.json``, located without importing torch."""
    spec = importlib.util.find_spec("torch")
    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = None
    if spec is None or not spec.submodule_search_locations or torch_version is None:
        raise ExplainError(
            "torch is not installed, so its graph-break registry cannot be read: "
            "pip install 'graphlint[trace]', or see the graph-break site"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / graph_break_settings()["registry"]
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExplainError(f"torch {torch_version} has no graph-break registry ({path.name} arrived in torch 2.7)") from None
    except (OSError, ValueError) as exc:
        raise ExplainError(f"cannot read torch's graph-break registry {path}: {exc}") from None


def _hints(code: str, lang: str) -> str:
    """The knowledge base's signatures that name ``code``: what people do about it."""
    from graphlint.tracer.knowledge import load_signatures

    found = [s for s in load_signatures() if code in s.codes]
    if not found:
        return ""
    title = "已知问题与处理" if lang == "zh" else "known issues"
    lines = ["", f"{title}:"]
    for signature in found:
        hint = signature.hint.get(lang) or signature.hint["en"]
        refs = f" ({', '.join(signature.refs)})" if signature.refs else ""
        lines.append(f"- {hint}{refs}")
    return "\n".join(lines) + "\n"
