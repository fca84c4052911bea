"""Stage 4: the torchair backend (GE graph mode), real on an NPU and offline elsewhere.

- ``real``: torch_npu is installed and CANN is present: torchair compiles and runs the target
  on the NPU, as the user's job would.
- ``offline``: torchair's own Python (from an installed torch_npu, ``--torchair PATH``,
  ``GRAPHLINT_TORCHAIR`` or ``graphlint torchair fetch``'s cache) runs its real FX → GE
  converters on CPU with stand-ins for the native parts, and stops once the GE graph is built
  (see ``graphlint/tracer/torchair/``).
- ``offline-static``: torchair cannot be imported here (e.g. it was built for a torch far from
  this one, or a library it imports, numpy, is missing): the graph's ops are checked against
  torchair's converter registry, read from its sources; findings are predictions, and the stage
  is ``inconclusive`` (its reason says why torchair could not be imported) unless one fails it.

Findings are TAxxx (``graphlint/tracer/torchair/verdicts.py``); the GE graphs and their op
counts go to ``artifacts["ge_graphs"]`` / ``artifacts["copies_ge"]`` for the copy report.
"""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import torch

from graphlint.tracer.calls import eager_outputs
from graphlint.tracer.classify.exception import finding_of_exception
from graphlint.tracer.findings import Finding, Mode, StageResult
from graphlint.tracer.knowledge import annotate
from graphlint.tracer.stages.base import Stage, StageContext
from graphlint.tracer.torchair.locate import TorchNpuSource, locate_torch_npu, unavailable_note

NOT_FOUND = (
    "no torchair found: torch_npu is not installed and no offline copy is known; run "
    "`graphlint torchair fetch` (downloads the torch_npu wheel that pairs with this torch into "
    "graphlint's cache), or pass --torchair PATH (a torch_npu wheel or folder)"
)


def runs_for_real(source: TorchNpuSource) -> bool:
    """The device check: an installed torch_npu with CANN beside it runs torchair for real."""
    return source.kind == "installed" and source.has_cann


class TorchairStage(Stage):
    name = "torchair"
    layer = "torchair"

    def unavailable_reason(self, ctx: StageContext) -> str | None:
        try:
            source = locate_torch_npu(ctx.options.torchair)
        except FileNotFoundError as exc:
            return str(exc)
        return (unavailable_note() or NOT_FOUND) if source is None else None

    def run(self, ctx: StageContext) -> StageResult:
        start = time.perf_counter()
        source = locate_torch_npu(ctx.options.torchair)
        if source is None:
            return StageResult(self.name, "skipped", mode="offline", reason=unavailable_note() or NOT_FOUND)
        findings: list[Finding] = []
        if not source.pairs_with(torch.__version__):
            findings.append(_version_mismatch(source, torch.__version__))
        reference = eager_outputs(ctx)
        if runs_for_real(source):
            mode, outcome = "real", self._translate_for_real(ctx)
        else:
            mode, outcome = self._translate_offline(ctx, source)
        findings += outcome.findings + self.accuracy(ctx, reference, outcome.outputs)
        findings = [annotate(f, ctx.options.lang) for f in findings]
        artifacts = {"torchair": f"{mode} {source.version or ''}".strip(), "source": source.describe()}
        ctx.dump("torchair/config.json", json.dumps({"mode": mode, "settings": _settings_of(mode)}))
        artifacts.update(outcome.artifacts)
        return self.result(
            start, findings, mode=mode, graphs=outcome.graphs, artifacts=artifacts, inconclusive=outcome.inconclusive
        )

    def _translate_offline(self, ctx: StageContext, source: TorchNpuSource) -> tuple[Mode, "_Outcome"]:
        from graphlint.tracer import one_compile
        from graphlint.tracer.torchair.offline import offline_torchair

        one = one_compile.shared(ctx, self.name)
        if one is not None:
            try:
                with one.hiding.shown():
                    result = one.run(self.name, lambda backend: one.translator.run(
                        torch.compile(ctx.target.fn, backend=backend), ctx.target, ctx.options.train
                    ))
                if one.usable[self.name]:
                    return "offline", self._outcome(ctx, result)
            finally:
                one_compile.close(ctx)
        one_compile.close(ctx)  # its torchair undone before torchair is imported alone
        with ExitStack() as session:
            try:
                torchair = session.enter_context(offline_torchair(source))
            except Exception as exc:  # noqa: BLE001 - torchair would not import: predict instead
                return "offline-static", self._predict(ctx, source, exc)
            return "offline", self._translate(ctx, torchair)

    def _translate_for_real(self, ctx: StageContext) -> "_Outcome":
        import importlib

        try:
            importlib.import_module("torch_npu")  # registers the NPU device and torchair
            torchair = importlib.import_module("torchair")
        except Exception as exc:  # noqa: BLE001 - a broken torch_npu/CANN install is this stage's finding
            finding = finding_of_exception(
                exc, stage=self.name, layer=self.layer, user_files=ctx.target.user_files, default_kind="compile-error"
            )
            finding.message = f"torch_npu could not be imported: {finding.message}"
            return _Outcome([finding], {}, None)
        return self._translate(ctx, torchair, config=torchair.CompilerConfig(), device="npu")

    def _translate(
        self, ctx: StageContext, torchair: Any, config: Any = None, device: str | None = None
    ) -> "_Outcome":
        from graphlint.tracer.torchair.runner import translate

        target = ctx.target if device is None else _moved_to(ctx.target, device)
        return self._outcome(ctx, translate(torchair, target, train=ctx.options.train, config=config))

    def _outcome(self, ctx: StageContext, result: Any) -> "_Outcome":
        from graphlint.tracer.copies.ge import count_ge_ops
        from graphlint.tracer.torchair.verdicts import findings_of_failures

        findings = findings_of_failures(result.failures)
        if result.error is not None:
            findings.append(
                finding_of_exception(
                    result.error, stage=self.name, layer=self.layer, user_files=ctx.target.user_files,
                    default_kind="compile-error",
                )
            )
        ge_graphs = [g.to_json() for g in result.graphs]
        dumped = []
        for graph in result.graphs:
            for suffix, text in (("original", graph.text), ("optimized", graph.optimized_text)):
                path = ctx.dump(f"torchair/{graph.name}.{suffix}.pbtxt", text)
                if path is not None:
                    dumped.append(str(path))
        artifacts = {
            "ge_graphs": ge_graphs,
            "copies_ge": count_ge_ops(ge_graphs),
            "cpu_decomposed": sorted(result.cpu_decomposed),
            "ge_dumped": dumped,
            "stand_ins_refused": result.stand_ins_refused,
            "stand_ins_assumed": result.stand_ins_assumed,
        }
        return _Outcome(
            findings, artifacts, result.outputs, graphs=len(result.graphs), inconclusive=_stand_in_reason(result)
        )

    def _predict(self, ctx: StageContext, source: TorchNpuSource, import_error: BaseException) -> "_Outcome":
        from graphlint.tracer.torchair.registry import scan_registry
        from graphlint.tracer.torchair.verdicts import findings_of_registry

        registry = scan_registry(source)
        findings = findings_of_registry(registry, _aot_graphs(ctx), ctx.target.user_files)
        note = f"torchair could not be imported offline ({type(import_error).__name__}: {import_error})"
        why = f"{note.splitlines()[0][:300]}; the graph's ops were only looked up in its converter registry"
        artifacts = {"offline_import_error": note[:2000], "registry_converters": len(registry)}
        return _Outcome(findings, artifacts, None, inconclusive=why)


@dataclass
class _Outcome:
    """What one way of running torchair produced, before the stage's common bookkeeping."""

    findings: list[Finding]
    artifacts: dict[str, Any]
    outputs: list[Any] | None  # one per input, to compare with eager
    graphs: int | None = None
    inconclusive: str | None = None  # why torchair could not judge (a stand-in could not answer; no import)


def _stand_in_reason(result: Any) -> str | None:
    """A stand-in that could not answer leaves torchair's verdict unknown, even where torchair
    caught the refusal itself and went on."""
    names = list(dict.fromkeys([*(f.stand_in for f in result.failures if f.stand_in), *result.stand_ins_refused]))
    if not names:
        return None
    return f"graphlint's stand-in for {', '.join(names)} could not answer as the native module would"


def _version_mismatch(source: TorchNpuSource, torch_version: str) -> Finding:
    from graphlint.tracer.torchair.verdicts import torchair_finding

    return torchair_finding(
        "version-mismatch",
        f"{source.describe()} is built for another torch than the running {torch_version}; "
        "its converters may not match this torch's ops (fetch the pairing wheel with "
        f"`graphlint torchair fetch --version {torch_version.split('+')[0]}`)",
    )


def _settings_of(mode: str) -> dict[str, Any]:
    """What this mode changed in torchair's default ``CompilerConfig``."""
    from graphlint.tracer.torchair.runner import OFFLINE_SETTINGS

    return OFFLINE_SETTINGS if mode == "offline" else {}


def _aot_graphs(ctx: StageContext) -> list[Any]:
    """The functionalized forward graphs: the aot stage's, else recorded now."""
    graphs = ctx.shared.get("aot_graphs")
    if graphs is None:
        from graphlint.tracer.calls import call_each_input
        from graphlint.tracer.recording import GraphRecorder

        import torch

        recorder = GraphRecorder()
        torch._dynamo.reset()
        try:
            call_each_input(torch.compile(ctx.target.fn, backend=recorder.aot_eager), ctx.target, ctx.options.train)
        except Exception:  # noqa: BLE001 - the aot stage reports this failure; predict on what was recorded
            pass
        graphs = [g for g in recorder.graphs if g.kind != "dynamo"]
    return graphs


def _moved_to(target: Any, device: str) -> Any:
    import dataclasses

    import torch

    def move(value: Any) -> Any:
        return value.to(device) if isinstance(value, (torch.Tensor, torch.nn.Module)) else value

    return dataclasses.replace(
        target,
        fn=move(target.fn),
        inputs=[torch.utils._pytree.tree_map(move, args) for args in target.inputs],
        kwargs=[torch.utils._pytree.tree_map(move, kw) for kw in target.kwargs],
    )


STAGE = TorchairStage
