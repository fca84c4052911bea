"""Every rule's own snippets, linted for real: INVALID ones flagged exactly on the lines marked
``# error`` (with the rule's code), VALID ones not flagged by the rule at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.checks.rules import all_rules
from tests.checks.conftest import check_json

CASES = [
    pytest.param(rule, kind, index, snippet, id=f"{rule.code}-{rule.slug}-{kind}-{index}")
    for rule in all_rules()
    for kind, snippets in (("valid", rule.VALID), ("invalid", rule.INVALID))
    for index, snippet in enumerate(snippets)
]


def test_every_rule_has_three_snippets_each_way() -> None:
    for rule in all_rules():
        assert len(rule.VALID) >= 3 and len(rule.INVALID) >= 3, rule.code


def test_codes_and_slugs_are_unique() -> None:
    rules = all_rules()
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.slug for r in rules}) == len(rules)


@pytest.mark.parametrize(("rule", "kind", "index", "snippet"), CASES)
def test_snippet(rule, kind: str, index: int, snippet: str, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / f"snippet_{rule.slug.replace('-', '_')}.py"
    path.write_text(snippet)
    status, report = check_json(str(path), "--no-cache", "--select", rule.code)
    lines = sorted(f["line"] for f in report["findings"])
    assert {f["code"] for f in report["findings"]} <= {rule.code}
    if kind == "valid":
        assert lines == [], report["findings"]
        assert status == 0
    else:
        marked = [n for n, text in enumerate(snippet.splitlines(), 1) if text.rstrip().endswith("# error")]
        assert marked, "an INVALID snippet marks its flagged lines with '# error'"
        assert lines == marked, report["findings"]
        assert status == (0 if rule.default_severity == "info" else 1)  # notices never fail a run
