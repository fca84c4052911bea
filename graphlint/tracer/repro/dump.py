"""The trace a repro is made from: a ``--dump`` folder of an earlier trace (``--from DIR``), or
one made now by tracing the target with only the stages the layer needs.

The folder holds ``report.json`` (the findings), ``target.json`` (the callable and the metadata
of its inputs), ``<stage>/<graph>.runnable.py`` (each graph as code with its input metadata) and
``torchair/config.json`` (what the offline run changed in torchair's config).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The stages a layer's repro reads from, for a trace made by `graphlint repro` itself.
STAGES_OF_LAYER: dict[str, tuple[str, ...]] = {
    "model": ("eager", "dynamo"),
    "dynamo": ("eager", "dynamo"),
    "aot": ("eager", "dynamo", "aot"),
    "accuracy": ("eager", "dynamo", "aot", "torchair"),
    "torchair": ("eager", "dynamo", "aot", "torchair"),
    "capture": ("eager", "dynamo", "capture"),
}


class DumpError(Exception):
    """The folder is not a trace dump, or lacks what the repro needs (the message says what)."""


@dataclass
class TraceDump:
    folder: Path
    report: dict[str, Any]

    @classmethod
    def read(cls, folder: Path) -> "TraceDump":
        try:
            report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DumpError(f"{folder} is not the --dump folder of a trace (report.json: {exc})") from exc
        return cls(folder, report)

    def json(self, relative: str) -> dict[str, Any]:
        path = self.folder / relative
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DumpError(f"{path} is missing or unreadable ({exc}); trace again with --dump") from exc

    def graph_code(self, stage: str, graph: str) -> str:
        path = self.folder / stage / f"{graph}.runnable.py"
        if not path.is_file():
            why = self.folder / stage / f"{graph}.runnable.FAILED.txt"
            reason = why.read_text(encoding="utf-8").strip() if why.is_file() else "not in the dump"
            raise DumpError(f"{path}: {reason}")
        return path.read_text(encoding="utf-8")

    def layer_failure(self, layer: str) -> dict[str, Any] | None:
        """The first error finding of ``layer`` (None when the layer passed)."""
        return next(
            (f for f in self.report.get("findings", []) if f.get("layer") == layer and f.get("severity") == "error"),
            None,
        )

    def stage_status(self, stage: str) -> str | None:
        return next((s["status"] for s in self.report.get("stages", []) if s["name"] == stage), None)


def trace_into(target: str, folder: Path, layer: str | None, torchair: str | None) -> TraceDump:
    """Trace ``target`` with ``--dump folder`` (the stages ``layer`` needs, or all) and read it."""
    from graphlint.tracer.ladder import run_ladder
    from graphlint.tracer.report.build import encodable
    from graphlint.tracer.stages import STAGE_ORDER
    from graphlint.tracer.stages.base import TraceOptions

    stages = STAGES_OF_LAYER[layer] if layer else tuple(STAGE_ORDER)
    report = encodable(run_ladder(target, TraceOptions(stages=stages, dump_dir=folder.resolve(), torchair=torchair)))
    (folder / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return TraceDump(folder, report)
