"""Where a rank is: its user's line and the collective it is inside, from a live stack (the
progress watcher) or from a faulthandler dump (a rank stopped after a hang). Standard library
only, so the merge can read dumps without torch."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from graphlint.tracer.locate import pick_user_frame

# One frame of a faulthandler dump: `  File "/x/model.py", line 88 in forward`.
_DUMP_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)', re.MULTILINE)
_DISTRIBUTED_DIR = "/torch/distributed/"
# The functions a rank waits in: torch.distributed's collectives, point-to-point calls, and
# the set-up calls where jobs stall building communicators (MindSpeed-LLM#1187).
COLLECTIVE_FUNCTIONS = frozenset(
    {
        "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_into_tensor", "all_gather_object",
        "all_to_all", "all_to_all_single", "broadcast", "broadcast_object_list", "reduce", "reduce_scatter",
        "reduce_scatter_tensor", "gather", "gather_object", "scatter", "scatter_object_list", "barrier",
        "monitored_barrier", "send", "recv", "isend", "irecv", "batch_isend_irecv", "wait_tensor",
        "init_process_group", "new_group", "destroy_process_group",
    }
)

Frame = tuple[str, int, str]  # file, line, function; outermost first


@dataclass(frozen=True)
class Where:
    file: str | None
    line: int | None
    collective: str | None  # the torch.distributed function the rank is inside, if any

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        place = f"{self.file}:{self.line}" if self.file else "an unknown line"
        return f"in {self.collective} at {place}" if self.collective else f"at {place}"


def where_in_frames(frames: list[Frame], user_files: set[str]) -> Where:
    user = pick_user_frame([(f, n) for f, n, _ in frames], user_files)
    return Where(user[0] if user else None, user[1] if user else None, collective_of_frames(frames))


def collective_of_frames(frames: list[Frame]) -> str | None:
    """The outermost torch.distributed function of the stack that is a collective (wrappers
    such as c10d's logger are skipped); None when the stack is not in torch.distributed."""
    inside = [function for file, _, function in frames if _DISTRIBUTED_DIR in file.replace("\\", "/")]
    return next((f for f in inside if f in COLLECTIVE_FUNCTIONS), None)


def main_thread_frames(dump: str) -> list[Frame]:
    """The frames (outermost first) of the thread in a faulthandler dump that runs graphlint's
    worker loop: the main thread, whichever thread the dump names as current."""
    blocks = [b for b in re.split(r"\n\s*\n", dump) if _DUMP_FRAME.search(b)]
    chosen = next((b for b in blocks if "graphlint/tracer/worker.py" in b), None)
    if chosen is None:
        chosen = next((b for b in blocks if "Current thread" in b), blocks[0] if blocks else "")
    frames = [(m["file"], int(m["line"]), m["function"]) for m in _DUMP_FRAME.finditer(chosen)]
    return list(reversed(frames))  # faulthandler lists the most recent call first
