"""A method stored on one instance (``module.forward = forward``) is that instance's, not its class's.

sglang's CPU offloader (``utils/offloader.py``) replaces ``forward`` on the layers that
``make_layers``' factory builds; the same layer class built elsewhere (a vision tower's merger,
captured in ``torch.npu.graph``) keeps its own ``forward``. Each test is a small project in
that shape, linted whole.
"""

from __future__ import annotations

from pathlib import Path

from graphlint.checks.extract import extract_facts
from graphlint.checks.incremental_solve import LiveSolve
from graphlint.checks.value_graph import CallGraph, LinkedModule
from graphlint.checks.valueflow import solve, solve_kept
from tests.checks.test_incremental_solve import canonical
from tests.checks.test_serving_precision import _lint, _sites

OFFLOADER = {
    "srt/__init__.py": "",
    "srt/utils/__init__.py": "",
    "srt/utils/offloader.py": """
        import torch
        from torch.func import functional_call


        class Offloader:
            def wrap_modules(self, modules):
                return [self.maybe_offload_to_cpu(module) for module in modules]

            def maybe_offload_to_cpu(self, module):
                original_forward = module.forward

                def forward(*args, **kwargs):
                    module.forward = original_forward
                    state = {k: v.to("npu", non_blocking=True) for k, v in module.state_dict().items()}
                    output = functional_call(module, state, args=args, kwargs=kwargs)
                    module.forward = forward
                    return output

                module.forward = forward
                return module


        _offloader = Offloader()


        def get_offloader():
            return _offloader
    """,
    "srt/utils/common.py": """
        from srt.utils.offloader import get_offloader


        def make_layers(num_layers, layer_fn):
            return get_offloader().wrap_modules(layer_fn(idx=idx) for idx in range(num_layers))
    """,
    "srt/layers/__init__.py": "",
    "srt/layers/linear.py": """
        import torch
        from torch import nn


        class ColumnParallelLinear(nn.Module):
            def __init__(self, size):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(size, size))

            def forward(self, x):
                return x @ self.weight
    """,
    "srt/models/__init__.py": "",
    # the language model: its projections come from make_layers, offloaded
    "srt/models/language.py": """
        from torch import nn

        from srt.layers.linear import ColumnParallelLinear
        from srt.utils.common import make_layers


        class LanguageModel(nn.Module):
            def __init__(self, size):
                super().__init__()
                self.projections = make_layers(4, lambda idx: ColumnParallelLinear(size))

            def forward(self, x):
                for projection in self.projections:
                    x = projection(x)
                return x
    """,
    # the vision tower: the same class as a plain attribute, never handed to the offloader
    "srt/models/vision.py": """
        from torch import nn

        from srt.layers.linear import ColumnParallelLinear


        class PatchMerger(nn.Module):
            def __init__(self, size):
                super().__init__()
                self.linear_fc1 = ColumnParallelLinear(size)

            def forward(self, x):
                return self.linear_fc1(x)
    """,
}


def _runner(captured: str) -> dict[str, str]:
    """A graph runner that captures ``captured`` (a model class of ``srt/models``) eagerly."""
    module = "vision" if captured == "PatchMerger" else "language"
    return {
        "srt/runner.py": f"""
            import torch

            from srt.models.{module} import {captured}


            class GraphRunner:
                def __init__(self):
                    self.model = {captured}(16)
                    self.graph = torch.npu.NPUGraph()

                def create_graph(self, x):
                    with torch.npu.graph(self.graph):
                        return self.model(x)
        """,
    }


def test_a_forward_stored_on_the_offloaded_layers_is_not_run_by_the_same_class_elsewhere(tmp_path: Path) -> None:
    """The captured merger's ``ColumnParallelLinear`` was never offloaded: calling it runs the
    class's ``forward``, not the offloader's, so the offloader's host-to-device copy is no
    finding of this capture."""
    report = _lint(tmp_path, {**OFFLOADER, **_runner("PatchMerger")})
    assert not [f for f in _sites(report) if f[0] == "offloader.py"], report["findings"]


def test_a_forward_stored_on_the_offloaded_layers_runs_where_those_layers_are_captured(tmp_path: Path) -> None:
    """The language model's layers are the offloaded ones: capturing them runs the offloader's
    ``forward`` and its copy to the device."""
    report = _lint(tmp_path, {**OFFLOADER, **_runner("LanguageModel")})
    assert ("offloader.py", "GL201", 14) in _sites(report), report["findings"]


# A project for the kept solve (``incremental_solve.py``): one layer patched, one not.
PATCHING = {
    "app/__init__.py": "",
    "app/layers.py": """\
from torch import nn


class Linear(nn.Module):
    def forward(self, x):
        return x


class Norm(nn.Module):
    def forward(self, x):
        return x


def offload(module):
    def forward(x):
        return x.cpu()

    module.forward = forward
    return module
""",
    "app/model.py": """\
from app.layers import Linear, Norm, offload


def run(x):
    patched = offload(Linear())
    plain = Linear()
    norm = Norm()
    y = plain(x)
""",
}


def _linked(sources: dict[str, str]) -> list[LinkedModule]:
    return [
        LinkedModule(path[:-3].replace("/", ".").removesuffix(".__init__"), path.endswith("__init__.py"), extract_facts(text.encode()))
        for path, text in sorted(sources.items())
    ]


def _callees(graph: CallGraph, files: list[LinkedModule], ordinal: int) -> set[str]:
    model = next(i for i, f in enumerate(files) if f.module == "app.model")
    return {t.qualname for t in graph.callees.get((model, ordinal), ()) if not isinstance(t, str)}


def test_an_instance_of_a_patched_class_runs_only_what_was_stored_on_it() -> None:
    """``plain(x)`` runs ``Linear.forward`` alone; the offloaded instance the stored one too (it may
    be called before the store: the graph does not follow the order of statements)."""
    sources = dict(PATCHING)
    files = _linked(sources)
    assert _callees(solve(files), files, 4) == {"Linear.forward"}  # run's calls: offload, Linear, Linear, Norm, plain
    sources["app/model.py"] += "    z = patched(x)\n"
    files = _linked(sources)
    assert _callees(solve(files), files, 5) == {"Linear.forward", "offload.forward"}


def test_the_kept_solve_is_extended_where_no_method_is_stored_on_a_new_class() -> None:
    """A call of an instance of a class told apart extends the kept solve, as a full solve answers."""
    sources = dict(PATCHING)
    live = LiveSolve(_linked(sources), {}, {}, False)
    sources["app/model.py"] += "    z = plain(y)\n"
    edited = _linked(sources)
    answer = live.extend(edited, {}, {}, False)
    assert isinstance(answer, CallGraph), answer
    assert canonical(answer) == canonical(solve(edited))


def test_a_method_stored_on_an_instance_of_another_class_solves_in_full() -> None:
    """Storing a method on a ``Norm``, made at two sites, makes it a class whose instances a full
    solve tells apart: the kept solve, which does not, is not extended."""
    sources = dict(PATCHING)
    sources["app/model.py"] += "    other = Norm()\n"
    live = LiveSolve(_linked(sources), {}, {}, False)
    sources["app/model.py"] += "    norm.forward = offload\n"
    assert isinstance(live.extend(_linked(sources), {}, {}, False), str)


# ``PATCHING`` with the one ``Linear`` made, the offloaded one
ONE_LINEAR = {**PATCHING, "app/model.py": PATCHING["app/model.py"].replace("    plain = Linear()\n", "").replace("plain(x)", "patched(x)")}


def test_a_patched_class_made_at_one_site_is_solved_once() -> None:
    """One ``Linear`` is made: telling its instances apart tells nothing apart (the class's one
    instance reads what was stored on it), so the first solve is the answer, and the call of the
    offloaded instance runs the stored ``forward`` and the class's."""
    files = _linked(ONE_LINEAR)
    solver = solve_kept(files, {}, {}, False)
    solver.release()
    assert solver.patched == {(1, "Linear")}
    assert solver.tagged == frozenset()
    assert _callees(solver.answer, files, 3) == {"Linear.forward", "offload.forward"}  # offload, Linear, Norm, patched


def test_a_second_site_making_a_patched_class_solves_in_full() -> None:
    """A second ``Linear()`` makes the offloaded class one a full solve tells apart: the kept
    solve, which did not, is not extended; the full solve keeps the stored ``forward`` with the
    offloaded instance."""
    sources = dict(ONE_LINEAR)
    live = LiveSolve(_linked(sources), {}, {}, False)
    sources["app/model.py"] += "    plain = Linear()\n    z = plain(x)\n"
    answer = live.extend(_linked(sources), {}, {}, False)
    assert isinstance(answer, str) and "tells apart" in answer, answer
    files = _linked(sources)
    assert _callees(solve(files), files, 5) == {"Linear.forward"}  # ..., patched, Linear, plain
