"""A custom op defined in the project is written into a runnable graph as source: its function,
every module-level registration on it, and what they use, and nothing else of the file."""

from __future__ import annotations

from pathlib import Path

import torch

from graphlint.tracer.dump import runnable_graph_code
from graphlint.tracer.repro.graphs import as_graph_module, load_graph
from graphlint.tracer.repro.source import custom_op_source, installed

OPS = '''
import torch
from torch.library import custom_op

SCALE = 3.0


def _times(x):
    return x * SCALE


@custom_op("graphlint_tests::thrice", mutates_args=())
def thrice(x: torch.Tensor) -> torch.Tensor:
    return _times(x)


torch.library.register_fake("graphlint_tests::thrice")(lambda x: torch.empty_like(x))


def unrelated():
    raise AssertionError("not needed by the op")


model = unrelated
'''


def test_the_op_its_registrations_and_what_they_use_are_cut(tmp_path: Path) -> None:
    file = tmp_path / "ops.py"
    file.write_text(OPS, encoding="utf-8")
    code = custom_op_source(str(file), "thrice", "graphlint_tests::thrice", set()).code()
    assert "from torch.library import custom_op" in code and "SCALE = 3.0" in code and "def _times" in code
    assert 'register_fake("graphlint_tests::thrice")' in code
    assert "unrelated" not in code and "model" not in code
    assert not installed(str(file)) and installed(torch.__file__)


def test_a_graph_calling_a_project_op_runs_from_its_code_alone(tmp_path: Path) -> None:
    """The runnable graph holds the op's source: loaded where the op's file is gone (and written
    again from the loaded graph), it still defines the op, and aot_eager (which needs the fake) runs it."""
    file = tmp_path / "ops.py"
    file.write_text(OPS, encoding="utf-8")
    namespace: dict[str, object] = {}
    exec(compile(OPS, str(file), "exec"), namespace)  # noqa: S102 - the op, as the project defines it
    gm = torch.fx.symbolic_trace(lambda x: torch.ops.graphlint_tests.thrice(x) + 1)
    code = runnable_graph_code(gm, [torch.ones(2)], {str(file)})
    file.unlink()
    assert "import ops" not in code and "def thrice" in code
    module, inputs = load_graph(code)
    again = runnable_graph_code(as_graph_module(module), inputs)  # the shrunk graph of a repro is written this way
    assert "def thrice" in again and "register_fake" in again
    module, inputs = load_graph(again)
    compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(*inputs), inputs[0] * 3 + 1)
