"""The worker process: load the target, run the stages it is given in order, and stream each
stage's start and result to the supervisor as JSON lines appended to the events file.

Run as ``python -m graphlint.tracer.worker REQUEST.json``. Its stdout and stderr go to a log the
supervisor keeps; ``faulthandler`` writes the Python stacks there on a fatal signal (a crash)
and on ``SIGUSR1`` (the supervisor's signal before it kills a hung stage).
"""

from __future__ import annotations

import faulthandler
import json
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, TextIO

from graphlint.tracer.findings import Finding, StageResult
from graphlint.tracer.stages.base import StageContext, TraceOptions

HANG_SIGNAL = signal.SIGUSR1


def options_from_json(data: dict[str, Any]) -> TraceOptions:
    return TraceOptions(
        stages=tuple(data["stages"]),
        train=data["train"],
        timeout=data["timeout"],
        dump_dir=Path(data["dump_dir"]) if data.get("dump_dir") else None,
        torchair=data.get("torchair"),
        lang=data.get("lang", "en"),
        memory_limit_gb=data.get("memory_limit_gb"),
        capture_limit=data.get("capture_limit", TraceOptions.capture_limit),
    )


def options_to_json(options: TraceOptions) -> dict[str, Any]:
    return {
        "stages": list(options.stages),
        "train": options.train,
        "timeout": options.timeout,
        "dump_dir": str(options.dump_dir) if options.dump_dir else None,
        "torchair": options.torchair,
        "lang": options.lang,
        "memory_limit_gb": options.memory_limit_gb,
        "capture_limit": options.capture_limit,
    }


class EventWriter:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def send(self, event: str, **fields: Any) -> None:
        # default=repr: an artifact that is not JSON (a stage's bug) must not lose the result
        self.stream.write(json.dumps({"event": event, **fields}, default=repr) + "\n")
        self.stream.flush()


def run_worker(request: dict[str, Any], events: EventWriter) -> None:
    from graphlint.tracer.collector import collect_less_often, freeze_long_lived
    from graphlint.tracer.distributed.rank_worker import RankWorker
    from graphlint.tracer.env import environment_facts
    from graphlint.tracer.first_call import copy_of, pristine_copy
    from graphlint.tracer.target import TargetError, load_target

    collect_less_often()
    events.send("environment", facts=environment_facts(request["options"].get("torchair")))
    try:
        target = load_target(request["target"], request.get("entry"), request.get("script_args"))
    except TargetError as exc:
        finding = exc.finding or load_error_finding(exc.__cause__, request["target"])
        events.send("target-error", message=str(exc), finding=finding)
        return
    except (Exception, SystemExit) as exc:  # SystemExit: the file or its factory called sys.exit()
        events.send("target-error", message=f"graphlint trace: loading {request['target']} failed: "
                    f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}",
                    finding=load_error_finding(exc, request["target"]))
        return
    freeze_long_lived()  # torch, the target's libraries and the model live as long as the worker
    events.send("target", name=target.name, user_files=sorted(target.user_files))
    # Under torchrun: the process group, the rank's facts and collectives (None otherwise).
    rank = RankWorker.join(target)
    ctx = StageContext(target, options_from_json(request["options"]))
    ctx.pristine = pristine_copy(target)
    ctx.shares_compile = rank is None and {"dynamo", "aot", "torchair"} <= set(request["run"])
    ctx.announce = lambda stage: events.send("phase", stage=stage, layer=stage_layer(stage))
    for name in request["run"]:
        if name != "eager" and ctx.pristine is not None:
            ctx.target = copy_of(ctx.pristine)  # as a user's first call would find it
        cpu_started = time.process_time()
        result = run_stage(name, ctx, events)
        result.cpu_seconds = time.process_time() - cpu_started
        wall, cpu = ctx.time_moved.get(name, (0.0, 0.0))
        result.seconds, result.cpu_seconds = result.seconds + wall, result.cpu_seconds + cpu
        ctx.results[name] = result
        if rank is not None:
            rank.stage_done(name, ctx)
        events.send("result", stage=name, result=result_to_json(result))


def load_error_finding(exc: BaseException | None, target_spec: str) -> dict[str, Any] | None:
    """The finding of an exception the target's own code raised while loading (its JSON), or
    None when no line of the user's raised it (a file or module that is not there: a usage
    error)."""
    from graphlint.tracer.classify.exception import finding_of_exception
    from graphlint.tracer.locate import user_line_of_exception

    user_files = {os.path.abspath(target_spec)} if os.path.isfile(target_spec) else set()
    if exc is None or user_line_of_exception(exc, user_files) is None:
        return None
    finding = finding_of_exception(exc, stage="load", layer="model", user_files=user_files, default_kind="load-error")
    return finding.to_json()


def stage_layer(name: str) -> str:
    from graphlint.tracer.stages import load_stage

    return load_stage(name).layer


def run_stage(name: str, ctx: StageContext, events: EventWriter) -> StageResult:
    """One stage, never raising: a stage that cannot run here is skipped with its reason; a bug
    in a stage (or a stage module that does not load) becomes an internal-error finding."""
    from graphlint.tracer.classify.codes import trace_code
    from graphlint.tracer.classify.exception import finding_of_exception
    from graphlint.tracer.stages import load_stage

    start = time.perf_counter()
    layer = "model"
    try:
        stage = load_stage(name)
        layer = stage.layer
        events.send("start", stage=name, layer=layer)
        reason = stage.unavailable_reason(ctx)
        if reason is not None:
            return StageResult(name, "skipped", reason=reason)
        return stage.run(ctx)
    except SystemExit as exc:  # the target called sys.exit(): its failure, reported at its line
        finding = finding_of_exception(
            exc, stage=name, layer=layer, user_files=ctx.target.user_files, default_kind="target-exit"
        )
        return StageResult(name, "failed", seconds=time.perf_counter() - start, reason=finding.message, findings=[finding])
    except Exception as exc:
        message = f"graphlint's {name} stage failed: {type(exc).__name__}: {exc}"
        finding = Finding(
            layer=layer, stage=name, kind="internal-error", message=message, code=trace_code("internal-error"),
            details={"traceback": traceback.format_exc()[-4000:]},
        )
        return StageResult(name, "failed", seconds=time.perf_counter() - start, reason=message, findings=[finding])


def result_to_json(result: StageResult) -> dict[str, Any]:
    data = result.to_json()
    data["findings"] = [f.to_json() for f in result.findings]
    data["artifacts"] = result.artifacts
    return data


def limit_memory(gigabytes: float | None) -> None:
    """Bound the worker's address space, so that a target allocating without end gets an
    allocation error (an ``oom`` finding) instead of the machine's out-of-memory killer.

    The bound is ``gigabytes`` beyond what the worker maps once torch is imported: the import
    alone maps about 0.6 GB with a CPU build and 3.2 GB with a CUDA build (its libraries), so a
    bound on the whole space would make the same limit fail the import on one build and leave
    the target little on another."""
    if gigabytes is not None:
        import torch  # noqa: F401  (its mappings are the worker's, not the target's)

        limit = mapped_bytes() + int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def mapped_bytes() -> int:
    """The process's address space (Linux's ``/proc``; 0 where there is none, as on macOS,
    where ``RLIMIT_AS`` is not enforced anyway)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    limit_memory(request["options"].get("memory_limit_gb"))
    sys.dont_write_bytecode = True  # importing the target leaves no __pycache__ in the user's tree
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(HANG_SIGNAL, file=sys.stderr, all_threads=True)
    with open(request["events"], "a", encoding="utf-8") as stream:
        run_worker(request, EventWriter(stream))
    return 0


if __name__ == "__main__":
    status = main(sys.argv)
    # Leave without waiting for threads the target started (a non-daemon one would keep the
    # worker alive until --timeout); everything it reports has been written by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
