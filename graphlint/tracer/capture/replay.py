"""Replay fidelity, on a CPU: what capture-once, replay-many does to the target's results.

``replay_record`` plays a guard-free engine (vLLM, sglang) and a guarded one (``torch.compile``
with ``mode="reduce-overhead"``, npugraph_ex) beside a real run of the target's inputs; this
module turns what it saw into findings:

- ``replay-mismatch`` (GL205): the guard-free replay gives another result than the graph that
  really ran (the accuracy check's tolerances), at the user's line whose value was baked in,
  with the value at capture and at replay. For a guarded engine the same change is a recapture.
- ``stale-address`` (GL206): the captured graph read a tensor that is not an input (a weight, a
  buffer) and the program replaced it with another tensor instead of updating it in place; the
  replay keeps reading the old memory. At the line that replaced it, else at the read.
- ``recapture-limit`` (GL207): the guarded engine needs more captures than ``--capture-limit``
  (torchair's default 64; npugraph_ex runs eagerly past it), naming the dimension or value that
  changes; a warning ``recapture`` when every call needs a capture of its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from graphlint.tracer.accuracy import compare_outputs
from graphlint.tracer.capture.codes import RECAPTURE_LIMIT, REPLAY_MISMATCH, STALE_ADDRESS
from graphlint.tracer.capture.outcome import capture_finding
from graphlint.tracer.capture.replay_diff import BakedValue, baked_values, first_use
from graphlint.tracer.capture.replay_record import Replay, ReplayLog, record_replays
from graphlint.tracer.findings import Finding
from graphlint.tracer.stages.base import TraceTarget

DEFAULT_CAPTURE_LIMIT = 64  # torchair's npugraph_ex capture_limit
GUARD_FREE = "guard-free (vLLM, sglang: one capture per shape, replayed without guards)"
GUARDED = "guarded (torch.compile reduce-overhead, npugraph_ex: a failing guard recaptures)"


@dataclass
class ReplayCheck:
    findings: list[Finding] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)  # the ``replay`` artifact


def check_replays(target: TraceTarget, capture_limit: int = DEFAULT_CAPTURE_LIMIT) -> ReplayCheck:
    log = record_replays(target)
    check = ReplayCheck()
    user_files = target.user_files
    by_site: dict[tuple[object, ...], Finding] = {}
    for replay in log.replays:
        for finding in _findings_of_replay(replay, log, user_files):
            key = (finding.code, finding.file, finding.line)
            if key in by_site:  # the same baked value or tensor, at another call
                by_site[key].count += 1
            else:
                by_site[key] = finding
    check.findings.extend(by_site.values())
    check.findings.extend(_recapture_findings(log, capture_limit, user_files))
    check.summary = {
        "calls": log.calls,
        "guard_free": {
            "model": GUARD_FREE,
            "captures": len(log.captures),
            "replays": len(log.replays),
            "not_replayed": [r.error for r in log.replays if r.replayed is None and r.error],
        },
        "guarded": {"model": GUARDED, "captures": len(log.guarded), "limit": capture_limit},
        "error": None if log.error is None else f"{type(log.error).__name__}: {log.error}",
    }
    return check


def _findings_of_replay(replay: Replay, log: ReplayLog, user_files: set[str]) -> list[Finding]:
    findings = [_stale_finding(replay, name, log, user_files) for name in replay.stale]
    if findings or replay.replayed is None:
        return findings  # a replaced tensor explains the difference; the replay says nothing more
    mismatch = compare_outputs("replay", replay.actual, replay.replayed)
    if mismatch is None:
        return []
    baked = baked_values(replay, log.guards.get(replay.graph), user_files)
    first = baked[0] if baked else None
    what = (
        f"{first.what} was {first.at_capture} at capture and is {first.at_replay} at this call"
        if first else "the captured graph does not show which value changed"
    )
    return [
        capture_finding(
            REPLAY_MISMATCH,
            f"a replay of the graph captured at call {replay.capture.call} gives another result at call "
            f"{replay.call} ({mismatch.message.split(' by ', 1)[-1]}): {what}; a guard-free engine replays "
            "the value baked in at capture",
            first.where if first else None,
            model=GUARD_FREE,
            capture_call=replay.capture.call,
            replay_call=replay.call,
            baked=[_baked_json(b) for b in baked],
            max_abs_error=mismatch.details.get("max_abs_error"),
        )
    ]


def _stale_finding(replay: Replay, name: str, log: ReplayLog, user_files: set[str]) -> Finding:
    captured = replay.capture.values[replay.capture.names.index(name)]
    where = log.replaced.get(captured.untyped_storage().data_ptr())
    read = first_use(replay.capture.module, name, replay.capture.labels, user_files)
    at = "replaced here" if where else "read here"
    return capture_finding(
        STALE_ADDRESS,
        f"{replay.capture.labels.get(name, name)} is read by the captured graph (call {replay.capture.call}) but was {at} with a new tensor "
        f"before call {replay.call}: a replay keeps reading the old memory; update it in place "
        "(`param.data.copy_(new)`, `buffer.copy_(new)`) instead",
        where or read,
        model=GUARD_FREE,
        tensor=replay.capture.labels.get(name, name),
        read_at=None if read is None else "{}:{}".format(*read),
        capture_call=replay.capture.call,
        replay_call=replay.call,
    )


def _recapture_findings(log: ReplayLog, limit: int, user_files: set[str]) -> list[Finding]:
    captures = len(log.guarded)
    every_call = log.calls > 1 and len(log.calls_recapturing) == log.calls
    if captures <= limit and not every_call:
        return []
    what, where = _what_changes(log, user_files)
    if captures > limit:
        finding = capture_finding(
            RECAPTURE_LIMIT,
            f"{log.calls} calls need {captures} graph captures, past the capture limit of {limit} "
            f"(npugraph_ex runs eagerly past it): {what}; pad or bucket it to a few sizes, or pass "
            "the changing value as a tensor",
            where, model=GUARDED, captures=captures, limit=limit,
        )
    else:
        finding = capture_finding(
            RECAPTURE_LIMIT,
            f"every call needs a graph capture of its own ({captures} for {log.calls} calls): {what}",
            where, model=GUARDED, captures=captures, limit=limit,
        )
        finding.kind, finding.severity = "recapture", "warning"
    return [finding]


def _what_changes(log: ReplayLog, user_files: set[str]) -> tuple[str, tuple[str, int] | None]:
    """The input dimension or integer that takes the most values across captures, at the user's
    line that first uses it; or, when the captures are different graphs, that a guard failed."""
    # By the input's label (``x.size(0)``), not by graph: the static graph of the first call and
    # the dynamic one dynamo compiles next see the same input, and the user asks how many values
    # it takes over all the calls.
    values: dict[tuple[str, int | None], set[Any]] = {}
    first_seen: dict[tuple[str, int | None], tuple[int, str]] = {}
    for _call, graph, args in log.runs:
        # A graph's labels are keyed by its placeholders, in their order: the run's arguments.
        for (name, label), arg in zip(log.labels[graph].items(), args):
            dims = list(enumerate(arg.shape)) if hasattr(arg, "shape") else [(None, arg)] if isinstance(arg, int) else []
            for dim, size in dims:
                values.setdefault((label, dim), set()).add(size)
                first_seen.setdefault((label, dim), (graph, name))
    changing = {key: seen for key, seen in values.items() if len(seen) > 1}
    graphs = Counter(graph for _call, graph, _args in log.runs)
    if not changing:
        return f"dynamo compiled {len(graphs)} graphs (a guard failed between calls)", None
    (label, dim), seen = max(changing.items(), key=lambda kv: len(kv[1]))
    graph, name = first_seen[label, dim]
    what = f"dimension {dim} of {label}" if dim is not None else label
    return f"{what} takes {len(seen)} values", first_use(log.graphs[graph], name, log.labels[graph], user_files)


def _baked_json(baked: BakedValue) -> dict[str, Any]:
    return {
        "what": baked.what, "at_capture": repr(baked.at_capture), "at_replay": repr(baked.at_replay),
        "where": None if baked.where is None else "{}:{}".format(*baked.where),
    }
