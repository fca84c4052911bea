"""The linked call graph, written out: PyCG's JSON, graphlint's own JSON edges, or Graphviz.

Callers are the functions (and module-level code, named by the module) of the files named on the
command line; callees are functions of the project by their dotted names, or names outside it by
the dotted path they were imported as. Builtins are left out, as the issue's scoring leaves them.
"""

from __future__ import annotations

from typing import Any

from graphlint.checks.facts import MODULE_SCOPE
from graphlint.checks.link import Project
from graphlint.checks.value_graph import FunctionKey, Target

_BUILTINS = "builtins."


def callgraph_edges(project: Project, targets: int) -> list[dict[str, Any]]:
    """Every call edge made in the first ``targets`` files: caller, callee, path, line, kind."""
    edges = []
    for file in range(targets):
        linked = project.files[file]
        for ordinal, site in enumerate(linked.facts.flow.calls):
            if site is None:
                continue
            caller = project.dotted(FunctionKey(file, site.scope))
            # the targets are a set's iteration (string hashes): sorted, so two runs print alike
            targets = project.targets(file, ordinal).items()
            for name, kind in sorted((name, kind) for target, kind in targets if (name := _name(project, target)) is not None):
                edges.append({"caller": caller, "callee": name, "path": linked.display, "line": site.line, "kind": kind})
        for (implicit_file, scope), implicit in project.graph.implicit_calls.items():
            if implicit_file != file:
                continue
            caller = project.dotted(FunctionKey(file, scope))
            for target in sorted(implicit, key=str):
                name = _name(project, target)
                if name is not None:
                    edges.append({"caller": caller, "callee": name, "path": linked.display, "line": 0, "kind": "implicit"})
    return edges


def callgraph_pycg(project: Project, targets: int) -> dict[str, list[str]]:
    """PyCG's format: every function of the files (and each module) → what it calls."""
    graph: dict[str, set[str]] = {}
    for file in range(targets):
        facts = project.files[file].facts
        graph.setdefault(project.dotted(FunctionKey(file, MODULE_SCOPE)), set())
        for qualname, definition in facts.flow.defs.items():
            if definition.kind == "function":
                graph.setdefault(project.dotted(FunctionKey(file, qualname)), set())
    for edge in callgraph_edges(project, targets):
        graph.setdefault(edge["caller"], set()).add(edge["callee"])
        graph.setdefault(edge["callee"], set())
    return {caller: sorted(callees) for caller, callees in sorted(graph.items())}


def callgraph_dot(project: Project, targets: int) -> str:
    lines = ["digraph callgraph {", "  rankdir=LR;", "  node [shape=box, fontname=monospace];"]
    seen = set()
    for edge in callgraph_edges(project, targets):
        pair = (edge["caller"], edge["callee"])
        if pair in seen:
            continue
        seen.add(pair)
        style = "" if edge["kind"] == "call" else f' [style=dashed, label="{edge["kind"]}"]'
        lines.append(f"  {_quote(pair[0])} -> {_quote(pair[1])}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _name(project: Project, target: Target) -> str | None:
    if isinstance(target, FunctionKey):
        return project.dotted(target)
    return None if target.startswith(_BUILTINS) else target


def _quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
