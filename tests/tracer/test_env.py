"""`graphlint env` and the version traps it warns about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphlint.tracer.env import cann_version, environment_facts, pairing, version_warnings
from tests.tracer.conftest import run_cli


def test_env_json_names_every_fact() -> None:
    status, out, _ = run_cli("env", "--format", "json")
    facts = json.loads(out)
    assert status == 0
    assert {"python", "torch", "torch_npu", "torchair", "cann", "transformers", "device", "pairing", "warnings"} <= facts.keys()
    assert facts["torch"].startswith("2.") and facts["device"] in ("cpu", "cuda", "npu")


def test_env_text_lists_the_facts() -> None:
    status, out, _ = run_cli("env")
    assert status == 0 and out.splitlines()[0].startswith("python")
    assert any(line.startswith("torch_npu") for line in out.splitlines())


def test_torch_and_torch_npu_of_different_releases_do_not_pair() -> None:
    warnings = version_warnings({"torch": "2.13.0+cpu", "torch_npu": "2.6.0.post3", "cann": "8.1.RC1"})
    assert len(warnings) == 1 and "do not pair" in warnings[0] and "torch 2.6.*" in warnings[0]
    assert version_warnings({"torch": "2.6.0", "torch_npu": "2.6.0.post3", "cann": "8.1.RC1"}) == []


def test_torch_npu_without_cann_warns_about_import_torch_and_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH"):
        monkeypatch.delenv(variable, raising=False)
    warnings = version_warnings({"torch": "2.13.0", "torch_npu": "2.13.0", "cann": None})
    assert len(warnings) == 1
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in warnings[0] and "import transformers" in warnings[0]


def test_cann_version_is_read_from_the_toolkit_version_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toolkit = tmp_path / "ascend-toolkit" / "latest"
    (toolkit / "x86_64-linux").mkdir(parents=True)
    (toolkit / "x86_64-linux" / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.1.RC1\n")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(toolkit))
    assert cann_version() == "8.1.RC1"
    assert environment_facts()["cann"] == "8.1.RC1"


def test_every_trace_report_embeds_the_environment(trace_json) -> None:
    _, report = trace_json("samples/trace/clean.py", "--stages", "aot,eager")  # shared with test_stages
    assert report["environment"]["python"] and report["environment"]["torch"]
    assert report["environment"].keys() == environment_facts().keys()


def test_a_torchair_given_on_the_command_line_is_the_one_reported(
    torch_npu_wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path))  # an empty cache: only --torchair finds it
    assert environment_facts()["torchair"] is None
    status, out, _ = run_cli("env", "--format", "json", "--torchair", str(torch_npu_wheel))
    assert status == 0 and json.loads(out)["torchair"].startswith("offline 2.")
    _, report_out, _ = run_cli("trace", "samples/trace/clean.py", "--stages", "eager", "--format", "json",
                               "--torchair", str(torch_npu_wheel))
    assert json.loads(report_out)["environment"]["torchair"] == json.loads(out)["torchair"]


@pytest.mark.parametrize(
    ("facts", "torchair", "line"),
    [
        ({"torch": "2.6.0", "torch_npu": "2.6.0.post5", "cann": "8.1.RC1"}, None,
         "torch 2.6.0 · torch_npu 2.6.0.post5 · CANN 8.1.RC1: supported (graphlint is tested on torch 2.6 to 2.14)"),
        ({"torch": "2.14.1", "torch_npu": None, "cann": None}, "2.14.0",
         "torch 2.14.1 · torch_npu 2.14.0 (offline) · CANN -: supported (graphlint is tested on torch 2.6 to 2.14; "
         "without CANN, torchair and capture run offline)"),
        ({"torch": "2.5.1", "torch_npu": "2.5.1", "cann": "8.0.0"}, None,
         "torch 2.5.1 · torch_npu 2.5.1 · CANN 8.0.0: not supported (graphlint is tested on torch 2.6 to 2.14)"),
        ({"torch": "2.13.0+cpu", "torch_npu": "2.8.0.post5", "cann": "8.2.RC1"}, None,
         "torch 2.13.0+cpu · torch_npu 2.8.0.post5 · CANN 8.2.RC1: not supported (torch_npu 2.8.0.post5 is built "
         "for another torch release line)"),
    ],
)
def test_env_names_the_pairing_and_whether_graphlint_supports_it(facts: dict, torchair: str | None, line: str) -> None:
    assert pairing(facts, torchair) == line


def test_env_text_has_the_pairing_of_this_machine() -> None:
    _, out, _ = run_cli("env")
    (line,) = [line for line in out.splitlines() if line.startswith("pairing")]
    assert "torch " in line and ": supported (" in line  # this machine runs a tested torch
