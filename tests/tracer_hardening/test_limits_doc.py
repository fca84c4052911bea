"""docs/limits.md stays true to the suite: every test it cites exists, and it says how each
failure target of samples/failures/ is reported."""

from __future__ import annotations

import re

from tests.tracer_hardening.conftest import FAILURES, REPO

LIMITS = REPO / "docs" / "limits.md"
_TEST_REFERENCE = re.compile(r"`(?P<path>tests/[\w/]+(?:\.py)?/?)(?:::(?P<name>\w+))?`")


def test_every_test_named_in_limits_md_exists() -> None:
    text = LIMITS.read_text(encoding="utf-8")
    references = list(_TEST_REFERENCE.finditer(text))
    assert len(references) >= 20
    for ref in references:
        path = REPO / ref["path"]
        assert path.exists(), f"docs/limits.md cites {ref['path']}, which does not exist"
        if ref["name"]:
            assert re.search(rf"^def {ref['name']}\(", path.read_text(encoding="utf-8"), re.MULTILINE), (
                f"docs/limits.md cites {ref['path']}::{ref['name']}, which does not exist"
            )


def test_limits_md_reports_every_failure_target() -> None:
    text = LIMITS.read_text(encoding="utf-8")
    missing = [p.name for p in FAILURES.glob("*.py") if f"`{p.name}`" not in text]
    assert missing == []
