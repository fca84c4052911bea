"""The static converter registry and `graphlint ops`, on the real wheel's torchair sources."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from graphlint.cli import main
from graphlint.tracer.locate import display_path
from graphlint.tracer.torchair.locate import source_at
from graphlint.tracer.torchair.registry import Registry, converters_in, scan_registry

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "trace" / "converter_gap.py"
# What a grep finds: the decorator with a dotted name as its argument.
GREP = re.compile(r"@(?:\w+\.)*register_fx_node_ge_converter\(\s*([\w.]+)\s*\)")


@pytest.fixture(scope="module")
def registry(torch_npu_wheel: Path) -> Registry:
    return scan_registry(source_at(torch_npu_wheel))


def test_registry_holds_every_converter_a_grep_finds(torch_npu_wheel: Path, registry: Registry) -> None:
    grepped = set()
    for path in source_at(torch_npu_wheel).torchair_dir().rglob("*.py"):
        for target in GREP.findall(path.read_text(encoding="utf-8", errors="replace")):
            grepped.add(target.removeprefix("torch.ops."))
    assert len(registry) == len(grepped) > 1000
    assert set(registry) == grepped


def test_status_is_judged_like_fx_summary(registry: Registry) -> None:
    assert registry.status_of("aten.index_put.default") == "not implemented"
    assert registry.status_of("aten.add.Tensor") == "implemented"
    assert registry.status_of("operator.add") == "implemented"
    assert registry.status_of("aten.no_such_op.default") == "missing"


def test_converters_in_reads_aliases_and_stacked_decorators() -> None:
    source = '''
import torchair as ta
from torchair import register_fx_node_ge_converter as reg

@ta.register_fx_node_ge_converter(torch.ops.aten.foo.default)
@reg(torch.ops.aten.foo.out)
def both(x):
    if x:
        raise NotImplementedError("no")
    return x

@reg(torch.ops.aten.bar.default)
def never(x):
    raise NotImplementedError("torch.ops.aten.bar.default ge_converter is not implemented!")
'''
    found = {(c.op, c.status, c.line) for c in converters_in(source, "x.py")}
    assert found == {
        ("aten.foo.default", "partly", 5),
        ("aten.foo.out", "partly", 6),
        ("aten.bar.default", "not implemented", 12),
    }


def test_a_file_libcst_cannot_parse_has_no_converters() -> None:
    assert converters_in("def broken(:\n", "bad.py") == []


def test_ops_for_a_target_names_the_user_line(torch_npu_wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", str(SAMPLE), "--torchair", str(torch_npu_wheel), "--format", "json"]) == 0
    rows = {row["op"]: row for row in json.loads(capsys.readouterr().out)["ops"]}
    index_put = rows["aten.index_put.default"]
    assert (index_put["status"], index_put["count"], index_put["type"]) == ("not implemented", 1, "aten")
    assert index_put["lines"] == [f"{display_path(str(SAMPLE))}:22"]  # relative to the working directory
    assert rows["aten.relu.default"]["status"] == "implemented"


def test_ops_whole_registry_as_csv(torch_npu_wheel: Path, registry: Registry, tmp_path: Path) -> None:
    out = tmp_path / "ops.csv"
    assert main(["ops", "--torchair", str(torch_npu_wheel), "--format", "csv", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "op,status,converter"
    assert len(lines) == len(registry) + 1
    assert any(line.startswith("aten.index_put.default,not implemented,") for line in lines)


def test_ops_table_and_bad_path(torch_npu_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", str(SAMPLE), "--torchair", str(torch_npu_wheel)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["op", "type", "status", "count", "inputs", "outputs", "lines"]
    assert table[1].startswith("aten.index_put.default")  # unsupported ops first
    assert main(["ops", "--torchair", str(tmp_path)]) == 2


def test_fetch_reports_a_version_pip_cannot_find(torch_npu_wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["torchair", "fetch", "--version", "0.0.1"]) == 1
    assert "pip could not download torch-npu==0.0.1" in capsys.readouterr().err


def test_fetch_finds_the_cached_wheel_without_pip(
    torch_npu_wheel: Path, torch_npu_wheel_version: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["torchair", "fetch", "--version", torch_npu_wheel_version]) == 0
    assert capsys.readouterr().out.strip() == str(torch_npu_wheel)
