"""The capture modes carried across calls, once the project is linked (the walk wrote down each
point's own modes and the calls before it: ``returning_calls.py``).

A point of a function runs in a mode only if the walk reaches it in that mode and every call
known to have returned before it can return in that mode; a function returns in the modes some
way it returns is reached in. A region walk enters a callee in the modes of its caller that the
call is made in (``regions.py``), and a site is captured only in those of its function's modes it
is reached in (``findings.py``). Each is a set that holds every mode a run can be in, so their
intersection does too.

What a call returns in is known only where its targets are known whole (as for
``none_returns.py``: project functions only, the call resolved, the value flow not cut short);
any other call may return in every mode. A function still being asked about (recursion), or
asked about past ``_DEEPEST`` others, may too.
Modes are sets of names, None for every mode.
"""

from __future__ import annotations

from graphlint.checks.facts import NO_CALL, Candidate
from graphlint.checks.link import Project
from graphlint.checks.value_graph import FunctionKey

Modes = frozenset[str] | None  # None: every mode
# Functions asked about at once (each needing the next one's returns), past which a function may
# return in every mode: Python's recursion limit is not reached.
_DEEPEST = 150


def meet(first: Modes, second: Modes) -> Modes:
    """The modes in both."""
    if first is None:
        return second
    return first if second is None else first & second


def join(first: Modes, second: Modes) -> Modes:
    """The modes in either."""
    return None if first is None or second is None else first | second


def covers(wider: Modes, narrower: Modes) -> bool:
    return wider is None or (narrower is not None and narrower <= wider)


class ModeFlow:
    """What the linked project says of the modes each call, site and return runs in."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._returns: dict[FunctionKey, Modes] = {}
        self._asking: set[FunctionKey] = set()
        self._chains: dict[tuple[int, int], Modes] = {}

    def call(self, file: int, ordinal: int) -> Modes:
        """The modes call ``ordinal`` of ``file`` is made in (of those its function runs in)."""
        facts = self.project.files[file].facts
        listed = facts.call_modes.get(ordinal)
        own = frozenset(listed) if listed is not None else None
        return meet(own, self._after(file, facts.call_after.get(ordinal, NO_CALL)))

    def candidate(self, file: int, candidate: Candidate) -> Modes:
        """The modes a site is reached in (of those its function runs in)."""
        own = frozenset(candidate.modes) if candidate.modes is not None else None
        return meet(own, self._after(file, candidate.after))

    def returns(self, key: FunctionKey) -> Modes:
        """The modes ``key`` may return in."""
        if key in self._returns:
            return self._returns[key]
        points = self.project.files[key.file].facts.return_points.get(key.qualname)
        if points is None or key in self._asking or len(self._asking) > _DEEPEST:
            return None
        self._asking.add(key)
        found: Modes = frozenset()
        for listed, after in points:
            found = join(found, meet(frozenset(listed) if listed is not None else None, self._after(key.file, after)))
        self._asking.discard(key)
        self._returns[key] = found
        return found

    def _after(self, file: int, index: int) -> Modes:
        """The modes in which every call of the chain ending at ``index`` can return (a guess
        for a function being asked about is every mode: what is found from it holds too)."""
        facts = self.project.files[file].facts
        if facts.flow.error is not None:
            return None
        pending: list[int] = []  # up the chain to a known link (no recursion: chains are long)
        while index != NO_CALL and (file, index) not in self._chains:
            pending.append(index)
            index = facts.after_calls[index][0]
        modes = None if index == NO_CALL else self._chains[file, index]
        for link in reversed(pending):
            modes = meet(modes, self._call_returns(file, facts.after_calls[link][1]))
            self._chains[file, link] = modes
        return modes

    def _call_returns(self, file: int, ordinal: int) -> Modes:
        project = self.project
        targets = project.targets(file, ordinal)
        if not targets or not project.resolved(file, ordinal) or project.graph.stopped is not None:
            return None
        if any(not isinstance(target, FunctionKey) or kind != "call" for target, kind in targets.items()):
            return None
        callees = project.runs_in(file, ordinal, None)
        if not callees:
            return None
        modes: Modes = frozenset()
        for callee, _ in callees:
            modes = join(modes, self.returns(callee))
        return modes
