"""Run the stage ladder under a supervisor and return the design's JSON report object.

The stages run in a worker process (``graphlint.tracer.worker``) in its own session, so a crash
(a signal) or a hang (a stage past ``--timeout``) takes down only the worker: the supervisor
turns it into a ``crash`` or ``hang`` finding of the stage that was running, with the Python
stacks faulthandler wrote, and starts a fresh worker at the next stage. Nothing here imports
torch; the worker does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from graphlint.tracer.classify.codes import trace_code
from graphlint.tracer.findings import Finding, StageResult
from graphlint.tracer.locate import frames_of_stack_trace, pick_user_frame
from graphlint.tracer.report.static import StaticCheck
from graphlint.tracer.stages import STAGE_ORDER
from graphlint.tracer.stages.base import TraceOptions
from graphlint.tracer.target import TargetError, file_target_user_files
from graphlint.tracer.torchair.locate import prepare_beside
from graphlint.tracer.worker import HANG_SIGNAL, options_to_json, result_to_json

POLL_SECONDS = 0.05
STACK_DUMP_GRACE_SECONDS = 2.0  # time faulthandler gets to write the stacks of a hung worker
# A new worker imports torch and loads the target before its first stage; on a busy machine
# that alone can take longer than a short --timeout, so loading gets this much more.
STARTUP_ALLOWANCE_SECONDS = 60.0

# (event, stage, result row or None): "start" when a stage begins, "result" when it ends.
Progress = Callable[[str, str, dict[str, Any] | None], None]


class Peers(Protocol):
    """The other ladders of a job running the same target at the same time (the ranks of a
    torch.distributed job). A ladder with peers ends at its first crash or hang instead of
    starting a fresh worker: its peers could not resume their collectives in step with it."""

    def stop_reason(self) -> str | None:
        """Polled while a stage runs: why to stop now (a peer died or hung), or None."""

    def stopping(self, reason: str) -> None:
        """This ladder's stage hung or crashed: tell the peers, so that they take their stacks
        (while every rank is still where it hung) and stop."""

    def stacks_taken(self) -> None:
        """The stacks of this ladder's hung worker are written and it is about to be killed: wait
        (briefly) for the peers' stacks first, since the kill lets their collectives fail and
        move on."""


@dataclass
class LadderOutcome:
    """What the supervisor collected from its workers, before the report is assembled."""

    target_name: str
    environment: dict[str, Any] | None = None
    user_files: list[str] = field(default_factory=list)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage → result JSON
    layers: dict[str, str] = field(default_factory=dict)  # stage → its failure layer
    static: StaticCheck | None = None  # started when the target's files are known
    preparing: threading.Thread | None = None  # torchair's sources made importable, beside the worker


def run_ladder(
    target_spec: str,
    options: TraceOptions,
    entry: str | None = None,
    script_args: list[str] | None = None,
    progress: Progress | None = None,
    peers: Peers | None = None,
) -> dict[str, Any]:
    """Trace ``target_spec`` through the stages of ``options``; the full report object.
    Raises ``TargetError`` when the target cannot be loaded."""
    from graphlint.tracer.report.build import build_report

    outcome = supervise(target_spec, options, entry, script_args or [], progress, peers)
    return build_report(outcome, options)


def supervise(
    target_spec: str, options: TraceOptions, entry: str | None, script_args: list[str], progress: Progress | None,
    peers: Peers | None = None,
) -> LadderOutcome:
    remaining = [name for name in STAGE_ORDER if name in options.stages]
    outcome = LadderOutcome(target_name=target_spec)
    try:
        _run_workers(target_spec, options, entry, script_args, progress, remaining, outcome, peers)
    except BaseException:
        if outcome.static is not None:
            outcome.static.cancel()
        raise
    if outcome.preparing is not None:
        outcome.preparing.join()  # done long before, unless no worker got as far as torchair
    # in ladder order: a stage may report after a later one crashed inside it (one_compile.py)
    outcome.results = {name: outcome.results[name] for name in STAGE_ORDER if name in outcome.results}
    return outcome


def _run_workers(
    target_spec: str, options: TraceOptions, entry: str | None, script_args: list[str], progress: Progress | None,
    remaining: list[str], outcome: LadderOutcome, peers: Peers | None = None,
) -> None:
    with tempfile.TemporaryDirectory(prefix="graphlint-trace-") as tmp:
        attempt = 0
        while remaining:
            attempt += 1
            worker = _Worker(Path(tmp), attempt, target_spec, entry, script_args, options, remaining, peers)
            if attempt == 1:
                _start_beside(target_spec, options, outcome)
            running = worker.follow(outcome, progress)
            remaining = [name for name in remaining if name not in outcome.results]
            if not remaining:
                break
            # The worker ended without finishing its stages: a crash or a hang of the running one.
            stage = running or remaining[0]
            result = worker.failure_result(stage, outcome, while_loading=running is None)
            outcome.results[stage] = result
            if progress:
                progress("result", stage, result)
            # The next worker runs what has not reported, each stage alone: a crash or hang inside
            # the dynamo stage's one compile is the aot or torchair stage's (one_compile.py).
            remaining = [name for name in remaining if name not in outcome.results]
            if peers is not None:  # the ladder ends here (see Peers)
                peers.stopping(result["reason"])
                for name in remaining:
                    skipped = StageResult(name, "skipped", reason=f"not run: {result['reason']}")
                    outcome.results[name] = result_to_json(skipped)
                break


def _start_beside(target_spec: str, options: TraceOptions, outcome: LadderOutcome) -> None:
    """What needs no loaded target starts with the first worker (which imports torch and loads
    the target meanwhile): the static check of a file target, whose one user file is known now
    (a ``module:factory``'s is known once the worker imported it), and torchair's sources made
    importable, which a wheel needs once (unpacked and compiled to bytecode)."""
    user_files = file_target_user_files(target_spec)
    if user_files is not None:
        outcome.static = StaticCheck(user_files)
    if "torchair" in options.stages:
        outcome.preparing = prepare_beside(options.torchair)


class _Worker:
    """One worker process and the events it appends to its file."""

    def __init__(
        self, folder: Path, attempt: int, target_spec: str, entry: str | None, script_args: list[str],
        options: TraceOptions, run: list[str], peers: Peers | None = None,
    ) -> None:
        self.events_path = folder / f"events-{attempt}.jsonl"
        self.log_path = folder / f"worker-{attempt}.log"
        self.timeout = options.timeout
        request = {
            "target": target_spec, "entry": entry, "script_args": script_args,
            "options": options_to_json(options), "run": run, "events": str(self.events_path),
        }
        request_path = folder / f"request-{attempt}.json"
        request_path.write_text(json.dumps(request), encoding="utf-8")
        self.events_path.touch()
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graphlint.tracer.worker", str(request_path)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.hung = False
        self.hang_log_offset = 0
        self.used: dict[str, float] = {}  # seconds each stage ran before its current phase
        self.stage_started = time.monotonic()
        self.stage_started_at = time.time()  # wall clock, for lining up the ranks of a job
        self.peers = peers
        self.stopped: str | None = None  # why this worker was stopped for its peers

    def follow(self, outcome: LadderOutcome, progress: Progress | None) -> str | None:
        """Read events until the worker exits (or is killed after a hang); returns the stage
        that was running when it ended (None when it finished or never started one)."""
        running: str | None = None
        deadline = time.monotonic() + self.timeout + STARTUP_ALLOWANCE_SECONDS
        offset, pending = 0, ""
        try:
            while True:
                exited = self.process.poll() is not None
                with open(self.events_path, encoding="utf-8") as stream:
                    stream.seek(offset)
                    chunk = stream.read()
                    offset = stream.tell()
                *lines, pending = (pending + chunk).split("\n")
                for line in lines:
                    event = json.loads(line)
                    running, deadline = self._handle(event, outcome, progress, running, deadline)
                if exited:
                    return running
                if self.peers is not None and (reason := self.peers.stop_reason()) is not None:
                    self.stopped = reason
                    self._stop_hung()
                    return running
                if time.monotonic() > deadline:
                    if self.peers is not None:
                        self.peers.stopping(f"{f'the {running} stage' if running else 'loading the target'} hung")
                    self._stop_hung()
                    return running
                time.sleep(POLL_SECONDS)
        finally:
            self._reap()

    def _handle(
        self, event: dict[str, Any], outcome: LadderOutcome, progress: Progress | None, running: str | None,
        deadline: float,
    ) -> tuple[str | None, float]:
        kind = event["event"]
        if kind == "environment":
            outcome.environment = event["facts"]
        elif kind == "target":
            outcome.target_name, outcome.user_files = event["name"], event["user_files"]
            if outcome.static is None or outcome.static.files != outcome.user_files:
                if outcome.static is not None:  # started on other files than the target's own
                    outcome.static.cancel()
                outcome.static = StaticCheck(outcome.user_files)
        elif kind == "target-error":
            raise TargetError(event["message"], event.get("finding"))
        elif kind in ("start", "phase"):  # a phase: one stage's work inside another's (one_compile.py)
            stage, now = event["stage"], time.monotonic()
            if running is not None:
                self.used[running] = self.used.get(running, 0.0) + now - self.stage_started
            outcome.layers[stage] = event["layer"]
            self.stage_started = now
            if kind == "start":
                self.stage_started_at = time.time()
                if progress:
                    progress("start", stage, None)
            return stage, now + self.timeout - self.used.get(stage, 0.0)  # each stage's --timeout in all
        elif kind == "result":
            outcome.results[event["stage"]] = event["result"]
            if progress:
                progress("result", event["stage"], event["result"])
            return None, time.monotonic() + self.timeout
        return running, deadline

    def _stop_hung(self) -> None:
        """Ask faulthandler for the stacks and wait until they are written (or a grace period
        passed); ``follow`` then kills the worker's session."""
        self.hung = True
        self.log.flush()
        self.hang_log_offset = self.log_path.stat().st_size
        try:
            os.kill(self.process.pid, HANG_SIGNAL)
        except ProcessLookupError:
            return
        give_up = time.monotonic() + STACK_DUMP_GRACE_SECONDS
        size = self.hang_log_offset
        while time.monotonic() < give_up:
            time.sleep(POLL_SECONDS * 2)
            previous, size = size, self.log_path.stat().st_size
            if size > self.hang_log_offset and size == previous:  # written, and no longer growing
                break
        if self.peers is not None:
            self.peers.stacks_taken()

    def _reap(self) -> None:
        """Kill whatever is left of the worker's session (the target's own children too)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        self.log.close()

    def failure_result(self, stage: str, outcome: LadderOutcome, while_loading: bool) -> dict[str, Any]:
        """The result of the stage the worker was running (or about to run, ``while_loading``
        the target) when it crashed or hung."""
        log = self.log_path.read_text(encoding="utf-8", errors="replace")
        layer = outcome.layers.get(stage, "model")
        status = self.process.returncode
        what = f"loading the target before the {stage} stage" if while_loading else f"the {stage} stage"
        if self.stopped is not None:
            stacks = log[self.hang_log_offset :]
            kind = "stopped"
            message = f"{what} was stopped: {self.stopped}"
        elif self.hung:
            stacks = log[self.hang_log_offset :]
            kind = "hang"
            limit = self.timeout + (STARTUP_ALLOWANCE_SECONDS if while_loading else 0)
            message = f"{what} did not finish within {limit:g} s; the worker was stopped"
        else:
            start = log.rfind("Fatal Python error")
            stacks = log[start:] if start >= 0 else log[-4000:]
            kind = "crash"
            message = f"{what} crashed: the worker {_exit_description(status)}"
        where = _user_frame_of_stacks(stacks, set(outcome.user_files))
        finding = Finding(
            layer=layer,  # type: ignore[arg-type]
            stage=stage, kind=kind, message=message, code=trace_code(kind),
            file=where[0] if where else None, line=where[1] if where else None,
            details={
                "exit_status": status, "stacks": stacks[-6000:],
                "started_at": self.stage_started_at, "ended_at": time.time(),  # wall clock: stacks' time
            },
        )
        seconds = time.monotonic() - self.stage_started + self.used.get(stage, 0.0)
        return result_to_json(StageResult(stage, "failed", seconds=seconds, reason=message, findings=[finding]))


def _exit_description(status: int | None) -> str:
    if status is not None and status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        if -status == signal.SIGKILL:  # not graphlint's (a hang is reported as such): the kernel's, usually
            return f"died of {name} (most often the kernel's out-of-memory killer: --memory-limit GB makes that an oom finding)"
        return f"died of {name}"
    return f"exited with status {status} before reporting the stage"


def _user_frame_of_stacks(stacks: str, user_files: set[str]) -> tuple[str, int] | None:
    """The user's innermost frame in a faulthandler dump of the current thread (which lists the
    most recent call first)."""
    current = stacks
    for marker in ("Current thread", "Thread 0x"):
        index = stacks.find(marker)
        if index >= 0:
            current = stacks[index:]
            break
    block = current.split("\n\n", 1)[0]
    return pick_user_frame(list(reversed(frames_of_stack_trace(block))), user_files)
