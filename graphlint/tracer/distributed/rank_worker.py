"""The rank's side of a worker process (``graphlint.tracer.worker`` calls in here when it runs
under torchrun): join the process group, record the rank's facts and, after each stage, the
collective ops of the graphs it recorded; a watcher thread keeps ``progress.json`` saying where
the rank is and since when, so a stuck rank can be told from ranks waiting on it."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from graphlint.tracer.distributed.facts import rank_facts
from graphlint.tracer.distributed.job import JobFiles, RankInfo, rank_of_job, write_json
from graphlint.tracer.distributed.stacks import Frame, Where, where_in_frames
from graphlint.tracer.stages.base import StageContext, TraceTarget

WATCH_SECONDS = 0.2
# Graphs whose collectives are compared, by the stage that records them in ``ctx.shared``.
GRAPHS_OF_STAGE = {"dynamo": "dynamo_graphs", "aot": "aot_graphs"}


class RankWorker:
    def __init__(self, info: RankInfo, target: TraceTarget) -> None:
        self.info = info
        self.files = JobFiles(info.folder)
        self.user_files = set(target.user_files)
        self.collectives: dict[str, list[dict[str, Any]]] = {}  # stage → its graphs' collectives
        self.errors: dict[str, str] = {}

    @classmethod
    def join(cls, target: TraceTarget) -> RankWorker | None:
        """None outside a distributed job. Otherwise the process group is up (the target's own,
        or one graphlint starts), the facts are written and the watcher runs."""
        info = rank_of_job()
        if info is None:
            return None
        worker = cls(info, target)
        facts = rank_facts()
        facts["process_group"] = ensure_process_group()
        write_json(worker.files.facts(info.rank), facts)
        threading.Thread(target=worker._watch, name="graphlint-rank-progress", daemon=True).start()
        return worker

    def stage_done(self, stage: str, ctx: StageContext) -> None:
        """Record the collectives of the graphs ``stage`` left in ``ctx.shared``."""
        from graphlint.tracer.distributed.collectives import collectives_in_graphs

        key = GRAPHS_OF_STAGE.get(stage)
        if key is None or key not in ctx.shared:
            return
        try:
            self.collectives[stage] = collectives_in_graphs(ctx.shared[key], self.user_files)
        except Exception as exc:  # a graph graphlint cannot read: reported in the rank's entry
            self.errors[stage] = f"{type(exc).__name__}: {exc}"
        write_json(self.files.collectives(self.info.rank), {"by_stage": self.collectives, "errors": self.errors})

    def _watch(self) -> None:
        """Sample the main thread; when its place changes, write where it is and since when."""
        main = threading.main_thread().ident
        last: Where | None = None
        while True:
            frame = sys._current_frames().get(main)
            if frame is None:
                return
            where = where_in_frames(_frames(frame), self.user_files)
            if where != last:
                last = where
                write_json(self.files.progress(self.info.rank), {"since": time.time(), "where": where.to_json()})
            time.sleep(WATCH_SECONDS)


def _frames(frame: Any) -> list[Frame]:
    frames = []
    while frame is not None:
        frames.append((frame.f_code.co_filename, frame.f_lineno or 0, frame.f_code.co_name))
        frame = frame.f_back
    return list(reversed(frames))


def ensure_process_group() -> dict[str, Any]:
    """Start the default process group when the target has not: HCCL on an NPU, NCCL on CUDA,
    gloo on CPU, from torchrun's environment (``env://``). Never raises: a failure is recorded
    and the target's own collectives then fail as findings."""
    import torch.distributed as dist

    from graphlint.tracer.env import device_kind

    if not dist.is_available():
        return {"backend": None, "started_by": None, "error": "this torch has no torch.distributed"}
    if dist.is_initialized():
        return {"backend": str(dist.get_backend()), "started_by": "target", "error": None}
    backend = {"npu": "hccl", "cuda": "nccl"}.get(device_kind(), "gloo")
    try:
        dist.init_process_group(backend)
    except Exception as exc:
        return {"backend": backend, "started_by": "graphlint", "error": f"{type(exc).__name__}: {exc}"}
    return {"backend": backend, "started_by": "graphlint", "error": None}
