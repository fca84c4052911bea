"""How the trace's findings confirm ``graphlint check``'s: by code on the finding's lines, by
line where one side names no code, never by a break of another code."""

from __future__ import annotations

import os

import pytest

from graphlint.tracer.findings import Finding
from graphlint.tracer.report.static import confirmation, traced_sites

PATH = "pkg/model.py"


def at(line: int, *codes: str | None) -> dict[tuple[str, int], list[str | None]]:
    return {(os.path.abspath(PATH), line): list(codes)}


def finding(code: str, line: int, predicts: list[str], end_line: int | None = None) -> dict:
    return {"code": code, "path": PATH, "line": line, "end_line": end_line or line, "predicts": predicts}


@pytest.mark.parametrize(
    ("static", "traced", "expected"),
    [
        (finding("GL106", 12, ["GB0291", "GB0142"]), at(12, "GB0142"), "code"),
        # dynamo reports a multi-line call at its first line or at a continuation line
        (finding("GL108", 12, ["GB0124"], end_line=15), at(14, "GB0124"), "code"),
        (finding("GL201", 12, []), at(12, "GL201"), "code"),
        (finding("GL203", 12, []), at(12, "GB0170"), "line"),  # the rule predicts no break
        (finding("GL106", 12, ["GB0291"]), at(12, None), "line"),  # a break without a code
        (finding("GL106", 12, ["GB0291"]), at(12, "GB0170"), None),  # something else broke there
        (finding("GL106", 12, ["GB0291"]), at(13, "GB0291"), None),
        (finding("GL106", 12, ["GB0291"]), {}, None),
    ],
    ids=["by-code", "code-in-span", "same-gl-code", "line-no-prediction", "line-no-code",
         "other-code", "other-line", "nothing-traced"],
)
def test_confirmation(static: dict, traced: dict, expected: str | None) -> None:
    assert confirmation(static, traced) == expected


def test_a_break_confirms_a_prediction_made_in_another_torch_releases_code() -> None:
    # str() of a SymInt: GL102 predicts GB0059 (torch ≤ 2.13); torch 2.14 files it as GB6053
    str_break = Finding(layer="dynamo", stage="dynamo", kind="graph-break", message="graph break", code="GB6053",
                        file=PATH, line=21, details={"meaning": "str-on-symint"})
    assert confirmation(finding("GL102", 21, ["GB0059"]), traced_sites([str_break])) == "code"
    # a GB6053 of another meaning (an object dynamo cannot repr) is something else going wrong
    other = Finding(layer="dynamo", stage="dynamo", kind="graph-break", message="graph break", code="GB6053",
                    file=PATH, line=21, details={"meaning": None})
    assert confirmation(finding("GL102", 21, ["GB0059"]), traced_sites([other])) is None
