"""The four output formats, parsed back: JSON exactly as the design says, SARIF 2.1.0,
GitHub annotations, and the text report with its code frame and region chain."""

from __future__ import annotations

import json
import re
from contextlib import chdir
from pathlib import Path

import pytest

from tests.checks.conftest import run_cli

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "static" / "crossfile"


@pytest.fixture(scope="module")
def outputs(cache_dir: Path) -> dict[str, str]:
    with chdir(SAMPLE.parents[2]):
        return {
            fmt: run_cli("check", "--format", fmt, "--cache-dir", str(cache_dir), "samples/static/crossfile")[1]
            for fmt in ("json", "sarif", "github", "text")
        }


def test_json_is_the_design_schema(outputs: dict[str, str]) -> None:
    data = json.loads(outputs["json"])
    assert set(data) == {"version", "findings", "summary"} and data["version"] == 1
    assert set(data["summary"]) == {"files", "findings", "by_code", "seconds", "presets", "platform", "held_presets"}
    assert data["summary"]["presets"] == []  # the sample imports no framework
    assert data["summary"]["platform"] == "npu"  # graphlint's default device
    assert data["summary"]["files"] == 5
    assert data["summary"]["by_code"] == {"GL201": 1, "GL202": 1, "GL203": 2}
    first = data["findings"][0]
    assert list(first) == [
        "code", "slug", "severity", "path", "line", "column", "end_line", "end_column",
        "message", "region", "fixable", "predicts",
    ]
    assert first == {
        **first,
        "code": "GL201",
        "slug": "host-device-copy-in-capture",
        "severity": "error",
        "path": "samples/static/crossfile/helpers.py",
        "line": 11,
        "column": 12,
        "end_line": 11,
        "end_column": 49,
        "region": {
            "kind": "capture",
            "entry": "samples/static/crossfile/run.py:14",
            "chain": ["Decoder.forward", "DecoderLayer.forward", "build_positions"],
            "steps": [
                # Decoder.forward's ``def``, its ``layer(x, mask)``, then DecoderLayer.forward's call of the helper.
                {"function": "Decoder.forward", "path": "samples/static/crossfile/model.py", "line": 14},
                {"function": "DecoderLayer.forward", "path": "samples/static/crossfile/model.py", "line": 16},
                {"function": "build_positions", "path": "samples/static/crossfile/layers.py", "line": 18},
            ],
        },
        "fixable": True,
    }


def test_sarif(outputs: dict[str, str]) -> None:
    sarif = json.loads(outputs["sarif"])
    assert sarif["version"] == "2.1.0"
    (run,) = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} >= {"GL000", "GL101", "GL302"}
    results = run["results"]
    assert len(results) == 4
    first = results[0]
    assert rules[first["ruleIndex"]]["id"] == first["ruleId"] == "GL201"
    region = first["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 11, "startColumn": 12, "endLine": 11, "endColumn": 49}
    assert first["level"] == "error"


def test_github_annotations(outputs: dict[str, str]) -> None:
    lines = outputs["github"].splitlines()
    assert len(lines) == 4
    assert re.match(
        r"^::error file=samples/static/crossfile/helpers\.py,line=11,col=12,endLine=11,endColumn=49,"
        r"title=GL201 host-device-copy-in-capture::.+ in capture region \(entry samples/static/crossfile/run\.py:14\) "
        r"via Decoder\.forward → DecoderLayer\.forward → build_positions$",
        lines[0],
    ), lines[0]


def test_text_has_location_chain_and_code_frame(outputs: dict[str, str]) -> None:
    text = outputs["text"]
    assert "samples/static/crossfile/helpers.py:11:12: GL201 host-device-copy-in-capture error" in text
    assert "capture at samples/static/crossfile/run.py:14 via Decoder.forward → DecoderLayer.forward → build_positions" in text
    assert "return torch.arange(x.shape[1]).to(x.device)" in text
    assert "4 finding(s) in 5 file(s)" in text
