"""Changed or removed assignments to a function's own variables, re-derived in the kept solve.

An edit that changes or removes what a line the last full solve saw assigns is not an addition
(``incremental_solve.py``), and what the last extension added it is not either
(``retraction.py``). Here the exact subset of such edits where the values the edit takes back
and those it adds reach nothing outside the variables it assigns: delete and re-derive on an
island of the value graph that no other node reads.

- Only assignments and calls' arguments changed (the file's definitions, decorations, entries...
  are the same; a call's arguments as ``call_retraction.py`` takes them back: calls outside the
  project that hand out what holds none of the project's functions, classes or instances, in
  each copy of the call; calls to project code as ``project_calls.py`` swaps their arguments,
  where no value moves), and each changed assignment binds a variable of a function (``f.x``: no parameter, not in a
  class body, not at module level), in no function with copies (``receiver_copies.py``). Such a
  node receives values only along the edges of its assignments in its file
  (``Solver.assign_sources`` notes their value nodes, in the file's order): no call binds it, no
  ``store`` writes it, no decision at the fixed point gives it values.
- The region is the changed variables and, along the graph's edges, every variable of the
  file's functions their values flow to. No node of it may be read by anything else: no watcher
  (a call of it, an attribute of it, an ``isinstance`` test), no edge out of the region, no
  call's argument (outside calls read their arguments' values, ``CallGraph.unseen``) but one of
  an outside call that only hands it out, where it holds, before and after, none of the
  project's functions, classes or instances (``call_retraction.py``: that decides nothing). Then no
  node outside it depends on it, and what its nodes hold is the least fixed point of their
  assignments over the values the rest of the graph holds, which the edit does not change:
  computed here, as a full solve would (the join with ``OUTSIDE_ANY``'s collapse,
  ``value_graph.py``), and no other node changes, nor the answer.
- The values the changed assignments assign must be nodes the solve has that make nothing when
  read: a variable, a call's result, a definition (``v``, ``c``, ``r``, ``it``, ``d``, ``self``);
  an attribute or a union would have made nodes and watchers a full solve of the new text lacks.
- Refused too: a changed variable a class's bases read (``ClassHierarchy.static`` decides
  lookups by them before the graph runs); a region node that would pass ``VALUE_CAP`` (a kept
  solve saturated none, and only parameters keep typed values, ``declared_types.py``); a table
  the solver computed from the files that changes but by the changed variables' names
  (``tables_again``: the variables bound, which only parameters are read in).

Anything else is refused, with the reason; the caller then drops the solver and solves in full.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from graphlint.checks.addition import copied, tables_again
from graphlint.checks.call_retraction import (
    NodeMade, Replaced, SiteKey, changed_arguments, entry_ordinals, hands_out_nothing, no_new_nodes, only_hands_out,
    copies_of_calls, own_variable, replace_arguments, site_keys,
)
from graphlint.checks.class_hierarchy import assigned_variables
from graphlint.checks.facts import FileFacts
from graphlint.checks.project_calls import Swap, joined_values, swapped
from graphlint.checks.receiver_copies import scoped_bodies
from graphlint.checks import value_graph
from graphlint.checks.value_graph import OUTSIDE_ANY, LinkedModule, Obj, delivered
from graphlint.checks.valueflow import Solver

# The kinds of value whose node a solve names and makes without edges or watchers of its own
_PLAIN = ("v", "c", "r", "it", "d", "self")


def rederive(solver: Solver, file: int, new: LinkedModule) -> int | str:
    """The kept ``solver`` with ``new`` in place of its file ``file`` and the values of the
    variables its changed assignments reach re-derived: by how much the work bound
    (``incremental_solve.py``; these nodes have no watchers) grew, or why not (then the solver
    may be half changed: the caller drops it)."""
    old = solver.files[file]
    why = _only_assignments(old, new)
    if why is not None:
        return why
    arguments = changed_arguments(solver, file, old.facts, new.facts)
    if isinstance(arguments, str):
        return f"not only assignments changed (calls: {arguments})"
    before, after = _keys(old.facts), _keys(new.facts)
    pairs = [json.loads(key) for key in (Counter(before) - Counter(after)) + (Counter(after) - Counter(before))]
    if any(target[0] != "v" for target, _ in pairs):
        return "an assignment to an attribute changed"
    defs = new.facts.flow.defs
    names = {target[1] for target, _ in pairs}
    if not all(own_variable(defs, name) for name in names):
        return "a changed assignment binds a parameter, a class attribute or a module name"
    if any(value[0] not in _PLAIN for _, value in pairs):
        return "a changed assignment's value makes nodes (an attribute, a union...)"
    if names & _read_by_bases(old.facts, new.facts):
        return "a class's bases read a changed variable"
    scoped = scoped_bodies(new)
    if copied(solver, file, sorted({name.rpartition(".")[0] for name in names})):
        return "a changed assignment is in a function that has copies"
    sources = _sources(solver, file, names, zip(before, old.facts.flow.assigns), zip(after, new.facts.flow.assigns))
    if isinstance(sources, str):
        return sources
    counts = Counter(target[1] for target, _ in new.facts.flow.assigns if target[0] == "v")
    local = {
        node: name for name in counts if own_variable(defs, name) and (node := solver.variables.get((file, name))) is not None
    }
    changed = {solver.variable(file, name) for name in names}  # (one assigned for the first time: no reader)
    local.update((solver.variables[file, name], name) for name in names)
    found = _region(solver, file, new.facts, changed, local, arguments)
    if isinstance(found, str):
        return found
    region, handed_out = found
    inflow = {node: sources[local[node]] if local[node] in sources else solver.assign_sources[file].get(local[node], []) for node in region}
    if any(len(inflow[node]) != counts[local[node]] for node in region):
        return "the assignments of a variable the edit changes are not all noted"
    derived = _least(solver, inflow)
    if isinstance(derived, str):
        return derived
    outside = {key: replaced for key, replaced in arguments.items() if not replaced.project}
    # what outside calls were handed and are after the edit (``call_retraction.py``)
    handed_before = [*(n for key in outside for n in solver.site_args[key].nodes()), *handed_out]
    handed_after = [*(n for replaced in outside.values() for n in replaced.args.nodes()), *handed_out]
    if not all(hands_out_nothing(solver.values[n]) for n in handed_before) or not all(
        hands_out_nothing(derived[n] if n in derived else solver.values[n]) for n in handed_after
    ):
        return "an outside call is handed a project function, class or instance by a call or variable the edit changes"
    swap = _project_swaps(solver, file, {key: replaced for key, replaced in arguments.items() if replaced.project})
    if isinstance(swap, str):
        return f"not only assignments changed (calls: {swap})"
    work = 0
    for node, values in derived.items():
        work += delivered(values) - delivered(solver.values[node])
        solver.collapsed += (OUTSIDE_ANY in values) - (OUTSIDE_ANY in solver.values[node])
        solver.values[node] = values
    for name in names:
        target = solver.variables[file, name]
        for node in {n for n in solver.assign_sources[file].get(name, ()) if n is not None} - set(sources[name]):
            solver.successors[node].discard(target)
        for node in sources[name]:
            if node is not None and node != target:
                solver.successors[node].add(target)
        # the makers of the edges into the variable are its assignments (``ValueGraph.repeated_edges``)
        made = Counter(node for node in sources[name] if node is not None and node != target)
        for node in {n for n in solver.assign_sources[file].get(name, ()) if n is not None} | set(made):
            if made[node] > 1:
                solver.repeated_edges[node, target] = made[node] - 1
            else:
                solver.repeated_edges.pop((node, target), None)
        solver.assign_sources[file][name] = sources[name]
    work += replace_arguments(solver, file, outside)  # (after the values: a rebound argument reads them)
    swap()
    solver.files[file] = new
    solver.classes.assigned[file] = assigned_variables(new.facts)
    solver.declared[file] -= {name for name in names if not counts[name] and name not in defs}
    solver.declared[file] |= {name for name in names if counts[name]}
    solver.scoped_by_file[file] = scoped
    why = tables_again(solver, file, names.__contains__, either_way=True)
    return work if why is None else why


def _project_swaps(solver: Solver, file: int, calls: dict[SiteKey, Replaced]) -> Callable[[], None] | str:
    """How to hand the changed calls of project code their new arguments (``project_calls.py``),
    or why not."""
    swaps: list[Swap] = []
    for key, replaced in calls.items():
        out = solver.results.get((file, key[1] if len(key) == 2 else (key[1], key[2])))
        if out is None:
            return "a changed call of project code has no result node"
        swaps.append((key, solver.site_args[key], replaced.args, out))
    return swapped(solver, swaps) if swaps else lambda: None


def _only_assignments(old: LinkedModule, new: LinkedModule) -> str | None:
    """Why the solve reads more of ``new`` than other assignments (None: it reads no more)."""
    a, b = old.facts, new.facts
    if (old.module, old.is_package) != (new.module, new.is_package) or a.flow.error or b.flow.error:
        return "the file's module or calls changed"
    parts_a, parts_b = json.loads(json.dumps(a.flow.solver_parts())), json.loads(json.dumps(b.flow.solver_parts()))
    for name in ("assigns", "calls"):  # (changed calls: ``call_retraction.py``)
        parts_a.pop(name), parts_b.pop(name)
    changed = [name for name in parts_a if parts_a[name] != parts_b[name]]
    if changed:
        return f"not only assignments changed ({', '.join(changed)})"
    if sorted(a.host_calls) != sorted(b.host_calls) or [(e.targets, e.via) for e in a.entries] != [(e.targets, e.via) for e in b.entries]:
        return "not only assignments changed (host calls or entries)"
    return None


def _keys(facts: FileFacts) -> list[str]:
    """The file's assignments as JSON (facts from the cache hold tuples where a walk holds lists)."""
    return [json.dumps(pair) for pair in json.loads(json.dumps(facts.flow.assigns))]


def _read_by_bases(*versions: FileFacts) -> set[str]:
    """The variables the file's classes' bases read, through the values assigned to them
    (``ClassHierarchy.static``: they decide lookups before the graph runs)."""
    assigned = [assigned_variables(facts) for facts in versions]
    read: set[str] = set()
    stack = [expr for facts in versions for d in facts.flow.defs.values() for expr in d.bases]
    while stack:
        expr = stack.pop()
        if isinstance(expr, (list, tuple)) and len(expr) == 2 and expr[0] == "v" and isinstance(expr[1], str):
            if expr[1] not in read:
                read.add(expr[1])
                stack.extend(value for by_var in assigned for value in by_var.get(expr[1], ()))
        elif isinstance(expr, (list, tuple)):
            stack.extend(expr)
    return read


def _sources(
    solver: Solver, file: int, names: set[str], before: Iterable[tuple[str, Any]], after: Iterable[tuple[str, Any]]
) -> dict[str, list[int | None]] | str:
    """Per variable of ``names``, the value nodes of its assignments after the edit (``after``:
    each as JSON, with the fact): an old one's where it stays (in order), else the node the solve
    has for its value."""
    kept: dict[str, list[str]] = {}
    for key, (target, _) in before:
        if target[0] == "v" and target[1] in names:
            kept.setdefault(target[1], []).append(key)
    old: dict[str, list[tuple[str, int | None]]] = {}
    for name, keys in kept.items():
        nodes = solver.assign_sources[file].get(name, [])
        if len(nodes) != len(keys):
            return "the assignments of a changed variable are not all noted"
        old[name] = list(zip(keys, nodes))
    sources: dict[str, list[int | None]] = {name: [] for name in names}
    try:
        with no_new_nodes(solver, file):
            for key, (target, value) in after:
                if target[0] != "v" or target[1] not in names:
                    continue
                stays = old.get(target[1], [])
                found = next((i for i, (k, _) in enumerate(stays) if k == key), None)
                sources[target[1]].append(stays.pop(found)[1] if found is not None else solver.compile(file, value))
    except NodeMade:
        return "a changed assignment's value is a node the solve lacks"
    return sources


def _region(
    solver: Solver, file: int, facts: FileFacts, changed: set[int], local: dict[int, str], calls: dict[SiteKey, Replaced],
) -> tuple[set[int], set[int]] | str:
    """The changed variables' nodes and the file's function variables their values flow to, with
    those of them outside calls read (``call_retraction.py``), or why something else reads one
    of them. ``calls``: the arguments of the calls the edit changed (in each copy of them)."""
    arguments: set[int] = set()  # read by a call that binds them or reads them otherwise
    outside: set[int] = set()  # read by calls outside the project that only hand them out
    entries = entry_ordinals(facts)
    copies = copies_of_calls(solver, file)
    for ordinal in range(len(facts.flow.calls)):
        for key, _ in site_keys(file, ordinal, copies):  # (a copy's call may read a closure's variable)
            args = calls[key].args if key in calls else solver.site_args.get(key)
            if args is not None:
                handed = ordinal not in entries and only_hands_out(solver, key)
                (outside if handed else arguments).update(args.nodes())
    region, stack = set(changed), list(changed)
    while stack:
        node = stack.pop()
        if solver.watchers[node] or node in arguments:
            return "a variable the edit changes is read by a call, an attribute or a test"
        for successor in solver.successors[node]:
            if successor not in local:
                return "a variable the edit changes flows out of the function's variables"
            if successor not in region:
                region.add(successor)
                stack.append(successor)
    return region, region & outside


def _least(solver: Solver, inflow: dict[int, list[int | None]]) -> dict[int, set[Obj]] | str:
    """The least values of ``inflow``'s nodes given the values of the nodes they read (those
    outside it as the solve holds them), joined as ``ValueGraph.add`` joins them."""
    values: dict[int, set[Obj]] = {node: set() for node in inflow}
    changed = True
    while changed:
        changed = False
        for node, sources in inflow.items():
            joined = joined_values(values[node], (values[s] if s in values else solver.values[s] for s in sources if s is not None))
            if len(joined) > value_graph.VALUE_CAP:  # (read when run: the tests lower it)
                return "a variable the edit changes would pass the value cap"
            if joined != values[node]:
                values[node], changed = joined, True
    return values

