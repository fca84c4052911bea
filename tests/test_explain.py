"""`graphlint explain CODE`: every code graphlint can print has an answer, in en and zh."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from graphlint.checks.findings import PARSE_ERROR
from graphlint.checks.rules import all_rules
from graphlint.cli import main
from graphlint.codes import code_entries
from graphlint.codes import explain as explain_module
from graphlint.tracer.capture import codes as capture_codes
from graphlint.tracer.classify.codes import TRACE_CODES
from graphlint.tracer.knowledge import load_signatures
from graphlint.tracer.torchair.verdicts import TORCHAIR_CODES

REPO = Path(__file__).resolve().parents[1]


def _printed_codes() -> set[str]:
    """Every code the checker and the tracer can put in a report, from where they are defined."""
    capture = {v.code for v in vars(capture_codes).values() if isinstance(v, capture_codes.CaptureCode)}
    return {
        PARSE_ERROR,
        *(rule.code for rule in all_rules()),
        *TRACE_CODES.values(),
        *(code for code, _ in TORCHAIR_CODES.values()),
        *capture,
    }


def _explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["explain", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_printed_code_is_explained(lang: str, capsys: pytest.CaptureFixture[str]) -> None:
    codes = _printed_codes()
    rule_codes = {rule.code for rule in all_rules()}
    assert len(codes) > 30 and {"GL000", "GL204", "GT005", "GD001", "TA001", "GL201"} <= codes
    for code in sorted(codes):
        status, out, err = _explain(capsys, code, "--lang", lang)
        assert status == 0 and err == "", code
        assert out.startswith(f"{code} (" if lang == "en" or code not in rule_codes else code), code
        if lang == "zh" and code in code_entries():
            entry = code_entries()[code]
            assert entry.summary["zh"] in out and entry.text["zh"] in out, code


def test_a_table_entry_names_a_real_doc_section() -> None:
    for code, entry in code_entries().items():
        page, _, anchor = entry.doc.partition("#")
        text = (REPO / page).read_text(encoding="utf-8")
        if anchor:  # GitHub's anchors: lower case, punctuation dropped, spaces as dashes
            anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}
            assert anchor in anchors, f"{code}: {entry.doc}"


def test_a_trace_code_says_what_it_is_and_where_it_is_documented(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _explain(capsys, "gt005")
    assert status == 0
    assert out.splitlines()[0] == "GT005 (crash)"
    assert "printed by: graphlint trace; layer: model; severity: error" in out
    assert "more: docs/trace.md#codes-of-trace-findings" in out
    status, out, _ = _explain(capsys, "TA001", "--lang", "zh")
    assert "转换器" in out and "NotImplementedError" in out


def test_a_rule_in_chinese_has_its_summary_and_the_knowledge_base_hints(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _explain(capsys, "GL104", "--lang", "zh")
    assert status == 0 and out.startswith("GL104：")
    assert "## What it does" in out  # the rule's own documentation follows, in English
    hints = [s.hint["zh"] for s in load_signatures() if "GL104" in s.codes]
    assert hints and all(h in out for h in hints)


def _torch_registry() -> dict[str, list[dict[str, object]]]:
    import torch._dynamo

    return json.loads(Path(torch._dynamo.__file__).with_name("graph_break_registry.json").read_text())


def test_a_graph_break_code_comes_from_torchs_registry_with_its_site_link(capsys: pytest.CaptureFixture[str]) -> None:
    registry = _torch_registry()
    status, out, _ = _explain(capsys, "GB0170")
    assert status == 0
    assert out.startswith("GB0170 (torch ")
    assert "Data-dependent branching" in out and "torch.cond" in out
    assert "more: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html" in out
    assert "known issues:" in out  # the knowledge base's signature for GB0170
    for code in [c for s in load_signatures() for c in s.codes if c.startswith("GB")]:
        assert code in registry, code
        assert _explain(capsys, code)[0] == 0, code
    status, _, err = _explain(capsys, "GB9999")
    assert status == 2 and "not in torch" in err and "gb9999.html" in err


def test_without_torch_a_graph_break_code_says_so(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = explain_module.importlib.util.find_spec
    monkeypatch.setattr(explain_module.importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    status, out, err = _explain(capsys, "GB0170")
    assert (status, out) == (2, "")
    assert err.startswith("graphlint explain: torch is not installed") and len(err.splitlines()) == 1


def test_an_unknown_code_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _explain(capsys, "XYZ")
    assert (status, out) == (2, "") and len(err.splitlines()) == 1 and "'XYZ'" in err
