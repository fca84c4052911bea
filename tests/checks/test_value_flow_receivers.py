"""A method of a shared base class, analysed per class of the object it is called on.

In vLLM every custom op derives from one ``CustomOp`` whose ``forward(*args, **kwargs)`` hands
its arguments to ``self._forward_method``, set in ``CustomOp.__init__`` from the subclass's
``forward_native`` / ``forward_cuda``. With one ``self`` for all of them, each model's compiled
region reached every op of every model. Each test is a small project in that shape (written
here), read through ``graphlint regions``; the soundness tests show that a method really called
through two classes still reaches both.
"""

from __future__ import annotations

import json
from contextlib import chdir
from pathlib import Path

import pytest

from graphlint.checks import valueflow
from graphlint.checks.engine import CheckOptions, link_paths
from graphlint.checks.graph_cache import graph_from_json, graph_to_json
from graphlint.checks.value_graph import CallGraph
from tests.checks.conftest import run_cli
from tests.checks.test_value_flow import regions

CUSTOM_OPS = """
import torch
from torch import nn


class CustomOp(nn.Module):
    def __init__(self):
        super().__init__()
        self._forward_method = self.dispatch_forward()

    def dispatch_forward(self):
        if torch.cuda.is_available():
            return self.forward_cuda
        return self.forward_native

    def forward(self, *args, **kwargs):
        return self._forward_method(*args, **kwargs)

    def forward_native(self, *args, **kwargs):
        raise NotImplementedError

    def forward_cuda(self, *args, **kwargs):
        return self.forward_native(*args, **kwargs)


class RMSNorm(CustomOp):
    def forward_native(self, x):
        return x

    def forward_cuda(self, x):
        return x


class SiluAndMul(CustomOp):
    def forward_native(self, x):
        return x


class RotaryEmbedding(CustomOp):
    def forward_native(self, positions, q, k):
        return q, k


class LlamaLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = RMSNorm()
        self.act = SiluAndMul()

    def forward(self, x):
        return self.act(self.norm(x))


class MambaLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.rotary = RotaryEmbedding()

    def forward(self, positions, q, k):
        return self.rotary(positions, q, k)
"""

ENTRIES = """
from ops import LlamaLayer, MambaLayer
import torch

llama = torch.compile(LlamaLayer())
{mamba}
"""


def _functions(tmp_path: Path, mamba: str = "mamba = MambaLayer()") -> list[str]:
    (entry,) = regions(tmp_path, {"ops.py": CUSTOM_OPS, "app.py": ENTRIES.format(mamba=mamba)})
    return entry["functions"]


def test_each_model_reaches_only_its_own_ops(tmp_path: Path) -> None:
    """The compiled Llama layer runs its norm and its activation through ``CustomOp.forward``,
    never the rotary embedding another model built: ``self`` in the base's methods is the
    receiver's own class."""
    assert _functions(tmp_path) == [
        "ops.CustomOp.forward",
        "ops.CustomOp.forward_cuda",
        "ops.LlamaLayer.forward",
        "ops.RMSNorm.forward_cuda",
        "ops.RMSNorm.forward_native",
        "ops.SiluAndMul.forward_native",
    ]


def test_a_base_method_called_through_two_classes_reaches_both(tmp_path: Path) -> None:
    """Soundness: the same ``CustomOp.forward`` compiled through two models reaches both models'
    ops."""
    (llama, mamba) = regions(
        tmp_path,
        {"ops.py": CUSTOM_OPS, "app.py": ENTRIES.format(mamba="mamba = torch.compile(MambaLayer())")},
    )
    assert "ops.RotaryEmbedding.forward_native" not in llama["functions"]
    assert "ops.RMSNorm.forward_native" not in mamba["functions"]
    assert "ops.RotaryEmbedding.forward_native" in mamba["functions"]
    assert "ops.CustomOp.forward" in mamba["functions"]


def test_an_attribute_a_base_method_stores_is_read_per_receiver_class(tmp_path: Path) -> None:
    """``self.impl = impl`` in the base's ``__init__`` (run through ``super().__init__``) is the
    impl each subclass's instance was built with; another class's impl stays out."""
    code = """
        import torch
        from torch import nn

        class Fast(nn.Module):
            def forward(self, x):
                return x

        class Slow(nn.Module):
            def forward(self, x):
                return x

        class Base(nn.Module):
            def __init__(self, impl):
                super().__init__()
                self.impl = impl

            def forward(self, x):
                return self.impl(x)

        class A(Base):
            def __init__(self):
                super().__init__(Fast())

        class B(Base):
            def __init__(self):
                super().__init__(Slow())

        b = B()
        fast = torch.compile(A())
    """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["functions"] == ["app.Base.forward", "app.Fast.forward"]


def test_what_a_base_stores_without_a_receiver_is_read_by_every_subclass(tmp_path: Path) -> None:
    """Soundness: ``Base.__init__(self, impl)`` called as a plain function (no receiver) stores
    into the shared attribute, which every subclass's lookup still reads."""
    code = """
        import torch
        from torch import nn

        class Fast(nn.Module):
            def forward(self, x):
                return x

        class Base(nn.Module):
            def __init__(self, impl):
                nn.Module.__init__(self)
                self.impl = impl

            def forward(self, x):
                return self.impl(x)

        class A(Base):
            def __init__(self):
                Base.__init__(self, Fast())

        class B(Base):
            pass

        fast = torch.compile(A())
    """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["functions"] == ["app.Base.forward", "app.Fast.forward"]


def test_a_classmethod_of_a_base_builds_the_class_it_is_called_on(tmp_path: Path) -> None:
    """``cls(...)`` in a base's classmethod: each subclass's call builds that subclass only."""
    code = """
        import torch
        from torch import nn

        class Base(nn.Module):
            @classmethod
            def build(cls):
                return cls()

        class Small(Base):
            def forward(self, x):
                return x

        class Big(Base):
            def forward(self, x):
                return x

        big = Big.build()
        fast = torch.compile(Small.build())
    """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["functions"] == ["app.Small.forward"]


def test_a_closure_in_a_base_method_reads_its_own_copy(tmp_path: Path) -> None:
    """A function nested in a base's method is copied with it: the closure in ``A``'s copy
    reads ``A``'s ``head``, not the head of ``B``, which is run eagerly elsewhere."""
    code = """
        import torch
        from torch import nn

        class HeadA(nn.Module):
            def forward(self, x):
                return x

        class HeadB(nn.Module):
            def forward(self, x):
                return x

        class Base(nn.Module):
            def forward(self, x):
                def once():
                    return self.head(x)
                return once()

        class A(Base):
            def __init__(self):
                super().__init__()
                self.head = HeadA()

        class B(Base):
            def __init__(self):
                super().__init__()
                self.head = HeadB()

        eager = B()(1)
        fast = torch.compile(A())
    """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["functions"] == ["app.Base.forward", "app.Base.forward.once", "app.HeadA.forward"]


def test_layers_a_base_builds_from_its_subclass_argument_stay_with_that_subclass(tmp_path: Path) -> None:
    """vLLM's ``LlamaModel(layer_type=...)``: each model that derives from the base builds the
    base's layers from its own layer class; compiling one model runs its own layers only."""
    code = """
        import torch
        from torch import nn

        class LlamaLayer(nn.Module):
            def forward(self, x):
                return x

        class OtherLayer(nn.Module):
            def forward(self, x):
                return x

        class LlamaModel(nn.Module):
            def __init__(self, layer_type=LlamaLayer):
                super().__init__()
                self.layers = nn.ModuleList([layer_type() for _ in range(2)])

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x

        class Mine(LlamaModel):
            pass

        class Other(LlamaModel):
            def __init__(self):
                super().__init__(layer_type=OtherLayer)

        eager = Other()(1)
        fast = torch.compile(Mine())
    """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["functions"] == ["app.LlamaLayer.forward", "app.LlamaModel.forward"]


def test_a_base_method_with_a_closure_still_reaches_what_its_callers_hand_it(tmp_path: Path) -> None:
    """Soundness: the closure of a copied method reads the arguments its copy was given."""
    code = """
        import torch
        from torch import nn

        class Head(nn.Module):
            def forward(self, x):
                return x

        class Base(nn.Module):
            def run(self, fn, x):
                def once():
                    return fn(x)
                return once()

        class A(Base):
            def forward(self, x):
                return self.run(Head(), x)

        class B(Base):
            pass

        fast = torch.compile(A())
    """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["functions"] == ["app.A.forward", "app.Base.run", "app.Base.run.once", "app.Head.forward"]


def test_a_compiled_wrapper_a_base_method_returns_runs_its_own_op(tmp_path: Path) -> None:
    """vLLM's ``CustomOp.maybe_compile``: a base's method compiles the op's ``forward_native``
    and returns a decorated wrapper that calls it. The wrapper in the norm's copy runs the
    norm only; the activation, compiled as its own entry, is not in the model's region."""
    code = """
        import functools

        import torch
        from torch import nn

        class CustomOp(nn.Module):
            def __init__(self):
                super().__init__()
                self._forward_method = self.maybe_compile(self.forward_native)

            def maybe_compile(self, fn):
                compiled = torch.compile(fn)

                @functools.wraps(fn)
                def wrapper(*args, **kwargs):
                    return compiled(*args, **kwargs)

                return wrapper

            def forward(self, *args, **kwargs):
                return self._forward_method(*args, **kwargs)

        class Norm(CustomOp):
            def forward_native(self, x):
                return x

        class Act(CustomOp):
            def forward_native(self, x):
                return x

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = Norm()

            def forward(self, x):
                return self.norm(x)

        class Other(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = Act()

            def forward(self, x):
                return self.act(x)

        eager = Other()(1)
        fast = torch.compile(Model())
    """
    by_line = {entry["line"]: entry["functions"] for entry in regions(tmp_path, {"app.py": code})}
    assert by_line[13] == ["app.Act.forward_native", "app.Norm.forward_native"]  # each op's own compile
    assert by_line[49] == ["app.CustomOp.forward", "app.CustomOp.maybe_compile.wrapper", "app.Model.forward", "app.Norm.forward_native"]


def test_a_capture_block_in_a_base_method_captures_every_subclass_runnable(tmp_path: Path) -> None:
    """Soundness: ``with torch.npu.graph(g):`` in a base's method, run through two subclasses'
    instances, captures both runnables."""
    code = """
        import torch
        from torch import nn

        class NetA(nn.Module):
            def forward(self, x):
                return x

        class NetB(nn.Module):
            def forward(self, x):
                return x

        class GraphRunner:
            def __init__(self, runnable):
                self.runnable = runnable
                self.graph = torch.npu.NPUGraph()

            def capture(self, x):
                with torch.npu.graph(self.graph):
                    return self.runnable(x)

        class RunnerA(GraphRunner):
            pass

        class RunnerB(GraphRunner):
            pass

        RunnerA(NetA()).capture(1)
        RunnerB(NetB()).capture(1)
    """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["kind"] == "capture"
    assert entry["functions"] == ["app.NetA.forward", "app.NetB.forward"]


def test_a_warm_run_reads_the_copies_from_the_cached_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The solved-graph cache keeps the calls per copy: a warm run (the graph read, not solved)
    marks the same regions as the cold one."""
    solved: list[int] = []
    real = valueflow.Solver.run

    def run(self: valueflow.Solver) -> CallGraph:
        solved.append(len(self.files))
        return real(self)

    monkeypatch.setattr(valueflow.Solver, "run", run)
    (tmp_path / "ops.py").write_text(CUSTOM_OPS)
    (tmp_path / "app.py").write_text(ENTRIES.format(mamba="mamba = MambaLayer()"))
    (tmp_path / "pyproject.toml").write_text("")

    def warm_or_cold() -> str:
        with chdir(tmp_path):
            status, out = run_cli("regions", "--format", "json", "--cache-dir", str(tmp_path / "cache"), ".")
        assert status == 0, out
        return out

    cold = warm_or_cold()
    assert "ops.RotaryEmbedding.forward_native" not in cold and "ops.SiluAndMul.forward_native" in cold
    warm = warm_or_cold()
    assert solved == [2]  # the warm run read the graph
    assert warm == cold
    with chdir(tmp_path):
        graph = link_paths(CheckOptions(paths=[Path(".")], use_cache=False)).project.graph
    assert graph.copies  # the base's methods were copied
    assert graph_from_json(json.loads(json.dumps(graph_to_json(graph)))) == graph
