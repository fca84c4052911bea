"""The one small interface every stage implements, and the context stages share in a worker.

A stage is a class with a ``name``, the ``layer`` its failures belong to, ``unavailable_reason``
(why it cannot run here, or None) and ``run(ctx) -> StageResult``. Stages run in order inside one
worker process; the supervisor restarts a worker after a crash or hang and resumes at the next
stage, so a stage must not rely on in-process state of an earlier stage except through
``StageContext`` (which it may rebuild: e.g. eager outputs are recomputed when missing).
"""

from __future__ import annotations

import hashlib
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from graphlint.tracer.findings import Finding, Layer, StageResult


@dataclass
class TraceTarget:
    """What to run: a callable and the inputs of each call (several inputs surface recompiles)."""

    fn: Callable[..., Any]
    inputs: list[tuple[Any, ...]]
    kwargs: list[dict[str, Any]]
    name: str  # for reports: "samples/trace/clean.py" or "pkg.mod:factory"
    user_files: set[str] = field(default_factory=set)  # absolute paths of the user's own files


@dataclass
class TraceOptions:
    stages: tuple[str, ...] = ("eager", "dynamo", "aot", "torchair", "capture")
    train: bool = False  # run backward too; otherwise the target runs under torch.no_grad()
    timeout: float = 300.0  # per stage, seconds
    dump_dir: Path | None = None
    torchair: str | None = None  # --torchair PATH (wheel, unpacked wheel, site-packages)
    lang: str = "en"
    memory_limit_gb: float | None = None  # --memory-limit: the worker's address space (RLIMIT_AS)
    capture_limit: int = 64  # --capture-limit: captures a guarded engine makes before it runs eagerly


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 200  # characters of one sanitised path part (file systems allow 255 bytes a name)


def _safe_part(part: str) -> str:
    """One path part of a dump file: only ``[A-Za-z0-9._-]``, never ``..``, at most ``_MAX_NAME``
    characters (a long one keeps its start and its end, the extension, and a digest of the whole
    so that two long names stay apart)."""
    safe = _SAFE_NAME.sub("_", part).strip(".") or "_"
    if len(safe) > _MAX_NAME:
        digest = hashlib.sha1(part.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        safe = f"{safe[: _MAX_NAME - 60]}-{digest}-{safe[-40:]}"
    return safe


@dataclass
class StageContext:
    target: TraceTarget
    options: TraceOptions
    eager_outputs: list[Any] | None = None  # one per input; set by the eager stage
    results: dict[str, StageResult] = field(default_factory=dict)  # earlier stages, this worker
    # In-process objects handed from one stage to the next (FX GraphModules, AOT graphs…).
    shared: dict[str, Any] = field(default_factory=dict)
    # The target as loaded, before any call: each stage after eager runs on a copy of it, as a
    # user's first compiled call would (None when it cannot be copied; see first_call.py).
    pristine: TraceTarget | None = None
    # Whether this worker runs the dynamo, aot and torchair stages through one compile (see
    # one_compile.py): all three are to run here, and not as a rank of a distributed job.
    shares_compile: bool = False
    # Tells the supervisor which stage's work the worker is doing inside the running stage
    # (a backend call of the one compile), so that a crash or hang there is that stage's.
    announce: Callable[[str], None] = lambda stage: None
    # Seconds (wall, CPU) done inside one stage for another: moved between their rows.
    time_moved: dict[str, list[float]] = field(default_factory=dict)

    def dump(self, relative: str, text: str) -> Path | None:
        """Write ``text`` under ``--dump DIR``; names from user code are sanitised so nothing is
        written outside the directory. Returns the path, or None without ``--dump``."""
        if self.options.dump_dir is None:
            return None
        parts = [_safe_part(p) for p in Path(relative).parts]
        path = self.options.dump_dir.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


class Stage(ABC):
    name: ClassVar[str]
    layer: ClassVar[Layer]

    def unavailable_reason(self, ctx: StageContext) -> str | None:
        """Why this stage cannot run on this machine (it is then ``skipped``), or None."""
        return None

    @abstractmethod
    def run(self, ctx: StageContext) -> StageResult:
        """Run the stage; failures of the target become findings, never exceptions."""

    def finding(self, kind: str, message: str, **fields: Any) -> Finding:
        return Finding(layer=self.layer, stage=self.name, kind=kind, message=message, **fields)

    def call_compiled(
        self, ctx: StageContext, backend: Callable[..., Any], fresh: bool = True
    ) -> tuple[list[Any] | None, list[Finding]]:
        """The target compiled with ``backend`` from a clean dynamo state (unless not ``fresh``)
        and called once per input: its outputs, or None and the finding of what it raised."""
        from graphlint.tracer.calls import fresh_inputs
        from graphlint.tracer.classify.exception import finding_of_exception
        from graphlint.tracer.recording import run_compiled

        target = ctx.target
        try:
            outputs = run_compiled(
                target.fn, fresh_inputs(target), target.kwargs, backend, train=ctx.options.train, fresh=fresh
            )
            return outputs, []
        except Exception as exc:
            return None, [
                finding_of_exception(
                    exc, stage=self.name, layer=self.layer, user_files=ctx.target.user_files,
                    default_kind="compile-error",
                )
            ]

    def accuracy(self, ctx: StageContext, reference: list[Any] | None, outputs: list[Any] | None) -> list[Finding]:
        """An ``accuracy`` finding when this stage's outputs differ from eager's (low-precision
        ones judged against a float64 run, see accuracy.py)."""
        from graphlint.tracer.accuracy import compare_outputs
        from graphlint.tracer.fp64_reference import fp64_outputs

        if reference is None or outputs is None:
            return []
        mismatch = compare_outputs(self.name, reference, outputs, lambda: fp64_outputs(ctx))
        return [] if mismatch is None else [mismatch]

    def result(
        self,
        started: float,
        findings: list[Finding],
        *,
        reason: str | None = None,
        inconclusive: str | None = None,
        **fields: Any,
    ) -> StageResult:
        """``failed`` when any finding is an error (the reason: ``reason``, else the first error's
        first line); else ``inconclusive`` when the stage could not do its check (``inconclusive``
        says why); else ``passed``. Timed from ``started`` (``time.perf_counter()``)."""
        errors = [f for f in findings if f.severity == "error"]
        if errors:
            status, why = "failed", reason or errors[0].message.splitlines()[0]
        elif inconclusive is not None:
            status, why = "inconclusive", inconclusive
        else:
            status, why = "passed", None
        return StageResult(
            self.name,
            status,  # type: ignore[arg-type]
            seconds=time.perf_counter() - started,
            reason=why,
            findings=findings,
            **fields,
        )
