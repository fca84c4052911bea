"""The discovery modes of a trace target, and the one-paragraph error of one that cannot load."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from graphlint.tracer.target import TargetError, load_target
from tests.tracer.conftest import run_cli

MODEL = """
import torch
from torch import nn

class Double(nn.Module):
    def forward(self, x, scale=1.0):
        return x * 2 * scale
"""


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(MODEL) + textwrap.dedent(body), encoding="utf-8")
    return path


def test_graphlint_target_tuple_with_kwargs(tmp_path: Path) -> None:
    path = write(tmp_path, "t.py", "def graphlint_target():\n    return Double(), (torch.ones(2),), {'scale': 3.0}\n")
    target = load_target(str(path))
    assert target.inputs[0][0].tolist() == [1.0, 1.0] and target.kwargs == [{"scale": 3.0}]
    assert target.fn(*target.inputs[0], **target.kwargs[0]).tolist() == [6.0, 6.0]
    assert target.user_files == {str(path.resolve())}


def test_graphlint_target_dict_gives_one_call_per_input(tmp_path: Path) -> None:
    body = "def graphlint_target():\n    return {'fn': Double(), 'inputs': [(torch.ones(1),), (torch.ones(3),)], 'kwargs': {'scale': 2.0}}\n"
    target = load_target(str(write(tmp_path, "t.py", body)))
    assert [args[0].shape[0] for args in target.inputs] == [1, 3]
    assert target.kwargs == [{"scale": 2.0}, {"scale": 2.0}]


def test_entry_wins_over_graphlint_target(tmp_path: Path) -> None:
    body = (
        "def graphlint_target():\n    raise AssertionError('not this one')\n"
        "def other():\n    return Double(), (torch.zeros(4),)\n"
    )
    target = load_target(str(write(tmp_path, "t.py", body)), entry="other")
    assert target.inputs[0][0].shape == (4,)


def test_model_and_example_inputs_list_of_tuples(tmp_path: Path) -> None:
    body = "model = Double()\nexample_inputs = [(torch.ones(2),), (torch.ones(5),)]\n"
    target = load_target(str(write(tmp_path, "t.py", body)))
    assert len(target.inputs) == 2 and isinstance(target.fn, torch.nn.Module)


def test_module_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "factory_mod.py", "def make():\n    return Double(), (torch.ones(2),)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "factory_mod", raising=False)
    target = load_target("factory_mod:make")
    assert target.name == "factory_mod:make" and target.user_files == {str(tmp_path / "factory_mod.py")}


def test_script_mode_traces_each_compiled_callable_with_its_first_inputs(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import torch
            steps = int(sys.argv[sys.argv.index("--steps") + 1])
            model = torch.nn.Linear(2, 1)
            compiled = torch.compile(model)

            @torch.compile(dynamic=True)
            def helper(x):
                return x + 1

            head = torch.nn.Linear(1, 4)
            head.compile()

            for step in range(steps):
                out = compiled(torch.full((3, 2), float(step)))
                helper(torch.ones(step + 1))
                head(out)
            """
        ),
        encoding="utf-8",
    )
    target = load_target(str(script), script_args=["--steps", "5"])
    # three compiled callables: one function calls each, one round per recorded call (3 kept)
    assert len(target.inputs) == 3
    outputs = target.fn(*target.inputs[2])
    assert outputs[0].shape == (3, 1) and outputs[1].tolist() == [2.0, 2.0, 2.0] and outputs[2].shape == (3, 4)
    assert torch.compile.__module__.startswith("torch")  # interception undone


def test_real_cli_script_mode_with_arguments() -> None:
    status, out, err = run_cli(
        "trace", "samples/trace/train_script.py", "--format", "json", "--stages", "dynamo", "--train",
        "--", "--steps", "2",
    )
    assert status == 0, err
    assert '"graphs": 1' in out


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("no/such/file.py", "no/such/file.py"),
        ("nosuchmodule_xyz:make", "nosuchmodule_xyz"),
        ("not a target", "module and a factory"),
    ],
)
def test_unloadable_target_exits_2_naming_what_was_looked_for(spec: str, words: str) -> None:
    status, out, err = run_cli("trace", spec, "--format", "json", "--stages", "eager")
    assert status == 2 and out == ""
    assert words in err and "graphlint trace" in err


def test_file_without_target_or_compile_says_what_it_looked_for(tmp_path: Path) -> None:
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(TargetError) as error:
        load_target(str(path))
    message = str(error.value)
    assert "graphlint_target()" in message and "example_inputs" in message and "torch.compile" in message


def test_factory_returning_the_wrong_shape_is_a_load_error_at_its_def_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "def graphlint_target():\n    return 42\n\ndef make():\n    return Double()\n"
    path = write(tmp_path, "wrong_shape.py", body)
    lines = path.read_text(encoding="utf-8").splitlines()
    target_line, make_line = lines.index("def graphlint_target():") + 1, lines.index("def make():") + 1
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "wrong_shape", raising=False)
    for spec, entry, returned, line in [
        (str(path), None, "int", target_line),
        (str(path), "make", "Double", make_line),
        ("wrong_shape:make", None, "Double", make_line),
    ]:
        with pytest.raises(TargetError, match=f"returned {returned}") as error:
            load_target(spec, entry)
        finding = error.value.finding
        assert finding is not None and (finding["code"], finding["kind"]) == ("GT012", "load-error")
        assert (finding["file"], finding["line"]) == (str(path.resolve()), line)
        assert finding["details"] == {"returned": returned}

    status, out, err = run_cli("trace", str(path), "--stages", "eager,dynamo", "--format", "json")
    assert status == 2 and "returned int" in err
    report = json.loads(out)
    assert [(f["code"], f["line"]) for f in report["findings"]] == [("GT012", target_line)]
    assert [(s["name"], s["status"]) for s in report["stages"]] == [("eager", "skipped"), ("dynamo", "skipped")]
    assert report["verdict"]["layer"] == "model"



def test_model_without_example_inputs_after_import_is_a_target_error(tmp_path: Path) -> None:
    body = "model = Double()\nexample_inputs = (torch.ones(2),)\ndel example_inputs\n"
    with pytest.raises(TargetError, match="`example_inputs`"):
        load_target(str(write(tmp_path, "t.py", body)))
