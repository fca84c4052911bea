"""``graphlint trace TARGET --nproc N``: run the trace on N ranks with torch's own launcher,
``python -m torch.distributed.run --standalone --nproc-per-node N -m graphlint trace TARGET …``
(the same as running that torchrun command yourself), then return the merged report.

The ranks share a fresh job folder (``GRAPHLINT_RANKS_DIR``). Rank 0 merges; when rank 0 itself
was lost, the reports the other ranks left are merged here. Afterwards no process of the job is
left, even when graphlint is interrupted: torchrun is stopped (SIGTERM, then SIGKILL), and so is
any rank or worker session left behind."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from graphlint.tracer.distributed.job import RANKS_DIR_VARIABLE, JobFiles, read_json
from graphlint.tracer.target import TargetError

LOG_TAIL_CHARS = 4000
TORCHRUN_GRACE_SECONDS = 10.0


def rank_arguments(args: argparse.Namespace) -> list[str]:
    """The ``graphlint trace`` options every rank runs with (``--nproc``, ``--baseline`` and the
    output format stay with the launcher)."""
    argv = [args.target, "--format", "json", "--stages", ",".join(args.stages), "--timeout", str(args.timeout)]
    optional = {"--entry": args.entry, "--lang": args.lang, "--torchair": args.torchair, "--dump": args.dump,
                "--memory-limit": getattr(args, "memory_limit", None)}
    for flag, value in optional.items():
        if value is not None:
            argv += [flag, str(value)]
    if args.train:
        argv.append("--train")
    if args.script_args:
        argv += ["--", *args.script_args]
    return argv


def launch_job(args: argparse.Namespace, nproc: int) -> dict[str, Any]:
    """Run the job and return its merged report. Raises ``TargetError`` (with torchrun's output)
    when no rank wrote a report."""
    from graphlint.tracer.distributed.merge import merge_reports

    with tempfile.TemporaryDirectory(prefix="graphlint-ranks-") as folder:
        files = JobFiles(Path(folder))
        command = [
            sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            "-m", "graphlint", "trace", *rank_arguments(args),
        ]
        env = {**os.environ, RANKS_DIR_VARIABLE: folder}
        env.setdefault("OMP_NUM_THREADS", "1")  # what torchrun sets anyway, without its warning
        log_path = Path(folder) / "torchrun.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            try:
                process.wait()
            finally:
                _stop_torchrun(process)
                for rank in range(nproc):
                    _kill_left_sessions(files, rank)
        merged = read_json(files.merged)
        if merged is not None:
            return merged
        reports = {rank: read_json(files.report(rank)) for rank in range(nproc)}
        if any(r is not None for r in reports.values()):
            return merge_reports(reports, nproc, args.lang)
        log = log_path.read_text(encoding="utf-8", errors="replace")
        # the ranks' own errors (a target that does not load) say it best; else torchrun's last words
        errors = list(dict.fromkeys(line for line in log.splitlines() if line.startswith("graphlint trace")))
        said = "\n".join(errors) if errors else log[-LOG_TAIL_CHARS:]
        raise TargetError(f"graphlint trace --nproc {nproc}: no rank wrote a report.\n{said}")


def _stop_torchrun(process: subprocess.Popen[bytes]) -> None:
    """When graphlint itself is interrupted: SIGTERM lets torchrun stop its ranks (each rank
    then kills its worker); whatever is left after a grace period is killed."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(TORCHRUN_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    _kill_session(process.pid)
    process.wait()


def _kill_left_sessions(files: JobFiles, rank: int) -> None:
    """torchrun starts each rank in its own session, and each rank its worker in another; a
    session still there after torchrun ended (a rank or worker killed out of order) is killed."""
    pids = [(read_json(files.process(rank)) or {}).get("pid"), (read_json(files.facts(rank)) or {}).get("pid")]
    for pid in pids:
        if isinstance(pid, int):
            _kill_session(pid)


def _kill_session(pid: int) -> None:
    try:
        if os.getsid(pid) == pid:  # still the session leader that was started, not a reused pid
            os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
