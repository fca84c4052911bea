"""Rank detection from the launcher's environment, and a target that does not load."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from graphlint.cli import main
from graphlint.tracer.distributed.job import RANKS_DIR_VARIABLE, rank_of_job
from tests.distributed.conftest import job_environment, processes_of_job

TORCHRUN_RANK_1 = {
    "RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "localhost", "MASTER_PORT": "29500",
    "TORCHELASTIC_RUN_ID": "abc",
}


def test_a_torchrun_rank_is_detected_with_its_job_folder(tmp_path: Path) -> None:
    info = rank_of_job({**TORCHRUN_RANK_1, RANKS_DIR_VARIABLE: str(tmp_path)})
    assert info is not None
    assert (info.rank, info.world_size, info.local_rank, info.folder) == (1, 4, 1, tmp_path)
    # without GRAPHLINT_RANKS_DIR every rank of the job derives the same folder
    assert rank_of_job(TORCHRUN_RANK_1).folder == rank_of_job({**TORCHRUN_RANK_1, "RANK": "3"}).folder


def test_outside_a_per_process_launcher_there_is_no_rank() -> None:
    assert rank_of_job({}) is None
    node_level = {k: v for k, v in TORCHRUN_RANK_1.items() if k != "LOCAL_RANK"}  # a scheduler's per-node RANK
    assert rank_of_job(node_level) is None
    assert rank_of_job({**TORCHRUN_RANK_1, "RANK": "4"}) is None  # not a rank of this world
    assert rank_of_job({**TORCHRUN_RANK_1, "WORLD_SIZE": "four"}) is None


def test_a_target_that_does_not_load_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    target = tmp_path / "broken_target.py"
    target.write_text("import torch\nraise ImportError('no module named apex')\ndef graphlint_target(): ...\n")
    out, err = io.StringIO(), io.StringIO()
    with job_environment() as job, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["trace", str(target), "--nproc", "2", "--stages", "eager", "--format", "json"])
    assert status == 2 and out.getvalue() == ""
    assert "no module named apex" in err.getvalue()
    assert processes_of_job(job) == []
