"""Run ``graphlint trace`` on hostile targets the way a user does (the CLI, real worker
processes) and record what a user would have to clean up afterwards.

Each run gets a unique marker in its environment, which every process it starts inherits (the
supervisor's workers, and the processes the target itself starts). While the trace runs, a
watcher notes every process carrying the marker; afterwards none may be left. The target's
folder is hashed before and after: the trace must not change, add or remove a file there.
Runs are cached for the session (each costs a torch import per worker).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from graphlint.cli import main

REPO = Path(__file__).resolve().parents[2]
FAILURES = REPO / "samples" / "failures"
MARKER_VARIABLE = "GRAPHLINT_HARDENING_RUN"
WATCH_INTERVAL_SECONDS = 0.2
# Killed processes vanish asynchronously (the kernel tears them down, init reaps them).
EXIT_GRACE_SECONDS = 10.0


@dataclass
class TraceRun:
    status: int
    stdout: str
    stderr: str
    report: dict[str, Any] | None  # stdout parsed as one JSON object; None when stdout is empty
    dump: Path
    seen: dict[int, str]  # pid → command line of every process of the run seen while it ran
    left: dict[int, str]  # the ones still alive after the trace returned
    changed: set[str]  # files of the target's folder added, removed or changed by the trace


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has ended; only its exit status waits for its parent


def processes_with_marker(marker: str) -> dict[int, str]:
    """Live processes (other than this one) whose environment holds ``marker``."""
    found = {}
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # it ended while we looked
            continue
        if needle in environ.split(b"\0") and _alive(int(entry.name)):
            found[int(entry.name)] = cmdline.strip()
    return found


class ProcessWatch:
    """Samples the marked processes in a thread while the trace runs."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.seen: dict[int, str] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._done.wait(WATCH_INTERVAL_SECONDS):
            self.seen.update(processes_with_marker(self.marker))

    def __enter__(self) -> ProcessWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        self._thread.join()

    def left_after_exit(self) -> dict[int, str]:
        deadline = time.monotonic() + EXIT_GRACE_SECONDS
        while (left := processes_with_marker(self.marker)) and time.monotonic() < deadline:
            time.sleep(WATCH_INTERVAL_SECONDS)
        return left


def folder_digest(folder: Path) -> dict[str, str]:
    """Relative path → sha256 of every file under ``folder`` (new __pycache__ files included)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@contextlib.contextmanager
def marked_environment() -> Iterator[str]:
    """A fresh marker in the environment, and no PYTHONDONTWRITEBYTECODE (a user's shell does not
    set it, so graphlint itself must keep the target's folder free of __pycache__)."""
    marker = uuid.uuid4().hex
    saved = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ[MARKER_VARIABLE] = marker
    try:
        yield marker
    finally:
        del os.environ[MARKER_VARIABLE]
        if saved is not None:
            os.environ["PYTHONDONTWRITEBYTECODE"] = saved


def trace(target: Path, dump: Path, *options: str) -> TraceRun:
    """``graphlint trace TARGET --format json --dump DUMP OPTIONS`` through the real CLI."""
    before = folder_digest(target.parent)
    out, err = io.StringIO(), io.StringIO()
    with marked_environment() as marker, ProcessWatch(marker) as watch:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["trace", str(target), "--format", "json", "--dump", str(dump), *options])
    left = watch.left_after_exit()
    after = folder_digest(target.parent)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    stdout = out.getvalue()
    return TraceRun(
        status=status, stdout=stdout, stderr=err.getvalue(), report=json.loads(stdout) if stdout else None,
        dump=dump, seen=watch.seen, left=left, changed=changed,
    )


FailureTrace = Callable[..., TraceRun]


@pytest.fixture(scope="session")
def failure_trace(tmp_path_factory: pytest.TempPathFactory) -> FailureTrace:
    """``failure_trace(target, *options)`` → ``TraceRun``; cached per arguments, each run with
    its own ``--dump`` folder."""
    cache: dict[tuple[str, ...], TraceRun] = {}

    def run(target: Path, *options: str) -> TraceRun:
        key = (str(target), *options)
        if key not in cache:
            cache[key] = trace(target, tmp_path_factory.mktemp(target.stem) / "dump", *options)
        return cache[key]

    return run
