"""Which rank of a ``torch.distributed`` job this process is, and the folder the ranks share.

torchrun (``torch.distributed.run``) gives every rank ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``/``MASTER_PORT`` and ``TORCHELASTIC_RUN_ID``. The ranks exchange their reports
through files in one job folder: ``GRAPHLINT_RANKS_DIR`` when set (``--nproc`` sets it; on
several machines point it at a shared filesystem), else a folder in the temporary directory
named after the run id and master port. Standard library only: the rank's supervisor runs it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RANKS_DIR_VARIABLE = "GRAPHLINT_RANKS_DIR"
# A stop note older than this rank's start by more than this is left over from an earlier job
# in the same folder (ranks start within seconds of each other).
STALE_NOTE_SECONDS = 60.0


@dataclass(frozen=True)
class RankInfo:
    rank: int
    world_size: int
    local_rank: int
    folder: Path  # the job folder shared by the ranks


def rank_of_job(environ: Mapping[str, str] = os.environ) -> RankInfo | None:
    """This process's rank when a per-process launcher started it (torchrun, or any launcher
    setting ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``), else None. ``LOCAL_RANK`` is required
    because cluster schedulers export ``RANK``/``WORLD_SIZE`` per node, for torchrun to read."""
    try:
        rank, world_size, local_rank = int(environ["RANK"]), int(environ["WORLD_SIZE"]), int(environ["LOCAL_RANK"])
    except (KeyError, ValueError):
        return None
    if not 0 <= rank < world_size:
        return None
    folder = environ.get(RANKS_DIR_VARIABLE) or os.path.join(
        tempfile.gettempdir(),
        f"graphlint-ranks-{environ.get('TORCHELASTIC_RUN_ID', 'job')}-{environ.get('MASTER_PORT', '0')}",
    )
    return RankInfo(rank, world_size, local_rank, Path(folder))


class JobFiles:
    """The files of one job folder. Each rank writes only under its own ``rank-N/``; the stop
    note is created once, by the first rank that dies or hangs; rank 0 writes ``merged.json``."""

    def __init__(self, folder: Path, started: float | None = None) -> None:
        self.folder = folder
        self.started = started  # when this rank started; None: accept every stop note

    def rank_dir(self, rank: int) -> Path:
        return self.folder / f"rank-{rank}"

    def report(self, rank: int) -> Path:
        return self.rank_dir(rank) / "report.json"

    def process(self, rank: int) -> Path:
        return self.rank_dir(rank) / "process.json"  # the rank's graphlint process (its supervisor)

    def facts(self, rank: int) -> Path:
        return self.rank_dir(rank) / "facts.json"

    def collectives(self, rank: int) -> Path:
        return self.rank_dir(rank) / "collectives.json"

    def progress(self, rank: int) -> Path:
        return self.rank_dir(rank) / "progress.json"

    def stacks_taken(self, rank: int) -> Path:
        return self.rank_dir(rank) / "stacks-taken"

    @property
    def stop_note(self) -> Path:
        return self.folder / "stop.json"

    @property
    def merged(self) -> Path:
        return self.folder / "merged.json"

    def post_stop(self, rank: int, reason: str) -> None:
        """Tell the other ranks to stop; the first note written stays (it names the first rank
        that failed)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            with open(self.stop_note, "x", encoding="utf-8") as stream:
                json.dump({"rank": rank, "reason": reason, "time": time.time()}, stream)
        except FileExistsError:
            pass

    def stop_reason_for(self, rank: int) -> str | None:
        """Why ``rank`` should stop: another rank posted a stop note. None otherwise."""
        note = read_json(self.stop_note)
        if note is None or note.get("rank") == rank:
            return None
        if self.started is not None and note.get("time", 0) < self.started - STALE_NOTE_SECONDS:
            return None
        return f"rank {note.get('rank')} stopped the job: {note.get('reason')}"


def write_json(path: Path, data: Any) -> None:
    """Write atomically, so a reader polling the file never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=repr), encoding="utf-8")
    os.replace(partial, path)


def read_json(path: Path) -> Any:
    """The file's JSON, or None when it is missing or unreadable (a rank that died mid-way)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
