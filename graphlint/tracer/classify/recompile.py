"""Read dynamo's recompile reports: which guard failed, at which user line, and limit hits.

"Recompiling function F in FILE:LINE / triggered by the following guard failure(s): / - 0/3:
n == 4  # for _ in range(n):  # file.py:8 in f / - User stack trace: ..." on the ``recompiles``
artifact logger; "torch._dynamo hit config.recompile_limit (8) / function: 'f' (FILE:LINE) /
last reason: ..." as a warning of ``torch._dynamo.convert_frame`` (torch 2.6 names the limit
``cache_size_limit``, and ``accumulated_cache_size_limit``, in the same message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphlint.tracer.locate import frames_of_stack_trace, pick_user_frame

_FUNCTION = re.compile(r"Recompiling function (?P<name>\S+) in (?P<file>.+?):(?P<line>\d+)")
_GUARD = re.compile(r"^\s*- (?:\d+/\d+: )?(?P<guard>.+?)(?:\s{2,}#.*)?$", re.MULTILINE)
_LIMIT = re.compile(
    r"hit config\.(?P<kind>\w+) \((?P<limit>\d+)\)\s*\n\s*function: '(?P<name>[^']+)' "
    r"\((?P<file>.+?):(?P<line>\d+)\)\s*\n\s*last reason: (?:\d+/\d+: )?(?P<guard>.+?)(?:\s{2,}#.*)?$",
    re.MULTILINE,
)


# The source comment a guard carries: "# for _ in range(n):  # wt/pkg/model.py:16 in forward",
# its path shortened by torch (``torch.utils._traceback.shorten_filename``).
_GUARD_SOURCE = re.compile(r"#\s*(?P<path>[^\s#]+\.py):(?P<line>\d+) in \w+")
_RESUME_FUNCTION = re.compile(r"^torch_dynamo_resume_in_(?P<name>\w+?)_at_(?P<line>\d+)$")


def readable_function(name: str) -> str:
    """Dynamo names the code after a graph break ``torch_dynamo_resume_in_forward_at_21``."""
    m = _RESUME_FUNCTION.match(name)
    return f"{m['name']} (resumed after the graph break at line {m['line']})" if m else name


@dataclass
class Recompile:
    function: str
    guard: str  # the first failing guard, e.g. "n == 4"
    file: str | None
    line: int | None


def recompile_of_log(message: str, user_files: set[str]) -> Recompile | None:
    function = _FUNCTION.search(message)
    if function is None:
        return None
    body = message.split("guard failure(s):", 1)[-1]
    guard = _GUARD.search(body)
    frames = frames_of_stack_trace(body) or _guard_source(guard["guard"] if guard else "", body, user_files)
    frames = frames or [(function["file"], int(function["line"]))]
    where = pick_user_frame(frames, user_files)
    return Recompile(
        function=readable_function(function["name"]),
        guard=guard["guard"].strip() if guard else "unknown guard",
        file=where[0] if where else None,
        line=where[1] if where else None,
    )


def _guard_source(guard: str, body: str, user_files: set[str]) -> list[tuple[str, int]]:
    """The user line of the failing guards, from their source comments, where the report has no
    stack trace of its own (torch 2.6): the first guard's comment, else the first other guard's
    that names a user file (2.6 may list first a guard of the first compile, which has none)."""
    lines = body.splitlines()
    first = [line for line in lines if guard and guard in line]
    for line in first + lines:
        m = _GUARD_SOURCE.search(line)
        if m is None:
            continue
        files = [file for file in sorted(user_files) if _shortened_to(file, m["path"])]
        if files:
            return [(files[0], int(m["line"]))]
    return []


def _shortened_to(file: str, shortened: str) -> bool:
    """Whether torch shortens ``file`` to ``shortened``: it cuts the path the file has in common
    with torch's install folder and one character more, the separator. When that common path is
    only the root ("/" for a venv under /root and a model under /work), the character cut is the
    first of the path's first folder: /work/pkg/model.py becomes "ork/pkg/model.py"."""
    return file == shortened or file.endswith("/" + shortened) or (file.startswith("/") and file[2:] == shortened)


@dataclass
class RecompileLimitHit:
    limit_kind: str  # "recompile_limit", "accumulated_recompile_limit" (torch 2.6: "cache_size_limit" …)
    limit: int
    function: str
    guard: str
    function_file: str
    function_line: int


def is_limit_hit(message: str) -> bool:
    """Whether a dynamo log message reports a recompile-limit hit (any torch's name for the limit)."""
    return _LIMIT.search(message) is not None


def limit_hit_of_log(message: str) -> RecompileLimitHit | None:
    m = _LIMIT.search(message)
    if m is None:
        return None
    return RecompileLimitHit(
        m["kind"], int(m["limit"]), readable_function(m["name"]), m["guard"].strip(), m["file"], int(m["line"])
    )
