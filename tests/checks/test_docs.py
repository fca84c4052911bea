"""`graphlint rules`, `graphlint explain` and docs/rules.md, all generated from the rule classes."""

from __future__ import annotations

import json
from pathlib import Path

from graphlint.checks.rules import all_rules
from tests.checks.conftest import run_cli

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## References")


def test_rules_lists_every_rule() -> None:
    status, out = run_cli("rules")
    assert status == 0
    rows = out.splitlines()
    assert [row.split()[0] for row in rows] == [r.code for r in all_rules()]
    assert ["GL201", "host-device-copy-in-capture"] in [row.split()[:2] for row in rows]
    data = json.loads(run_cli("rules", "--format", "json")[1])
    assert {d["code"]: d["fix"] for d in data}["GL101"] == "unsafe"


def test_every_rule_documents_itself_and_cites_its_seed() -> None:
    for rule in all_rules():
        doc = rule.documentation()
        assert all(h in doc for h in HEADINGS), rule.code
        references = doc.split("## References", 1)[1]
        assert rule.refs and all(ref in references for ref in rule.refs), rule.code


def test_explain_prints_the_rule_documentation() -> None:
    status, out = run_cli("explain", "GL201")
    assert status == 0
    assert out.startswith("GL201 (host-device-copy-in-capture)")
    assert "torchair#236" in out and "fix: safe" in out
    assert run_cli("explain", "sync-in-capture")[1].startswith("GL202")
    assert run_cli("explain", "GL999")[0] == 2


def test_docs_rules_md_is_up_to_date() -> None:
    """Regenerate with: graphlint rules --format markdown > docs/rules.md"""
    assert DOCS.read_text(encoding="utf-8") == run_cli("rules", "--format", "markdown")[1]
