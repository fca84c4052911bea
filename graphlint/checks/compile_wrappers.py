"""What ``torch.compile(f)`` returns: a wrapper, not ``f``.

The call form compiles only the callable it returns (``g = torch.compile(f)`` leaves ``f``
eager; the decorator form rebinds the name, so there every call of the name is the wrapper's).
The solver gives the compile call's result the object ``("W", file, ordinal[, copy])``
(``call_semantics.py``): calling it runs what the call compiled, with the caller's arguments, and
an attribute of it is the compiled object's (``OptimizedModule`` forwards attribute reads to the
module it wraps). From the solved values, the call graph keeps per call site the compile calls
whose wrapper it may run (``wrapper_calls``), the sites that run nothing else (``wrapper_only``:
a function entered there runs compiled), and the compile calls whose wrapper is handed to code
outside the project (``escaped_wrappers``: its calls cannot be followed). ``regions.py`` enters a
call-form entry's region as compiled only through its wrapper's calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from graphlint.checks import apis
from graphlint.checks.value_graph import CallArgs, Obj, ValueGraph

WRAPPER = "W"
CompileCall = tuple[int, int]  # (file, ordinal) of a ``torch.compile(f)`` call


class CompileWrappers(ValueGraph):
    """The solver's half that makes and calls the wrappers (it provides ``call`` and ``site_args``)."""

    site_args: dict[tuple[Any, ...], CallArgs]
    call: Callable[[Any, Obj, CallArgs, int], None]

    def compiles_here(self, site: Any, name: str, args: CallArgs, out: int) -> bool:
        """``torch.compile(f)`` at a call site: its result is the wrapper (the module's docstring);
        ``torch.compile(mode=...)`` and ``torch._dynamo.optimize(backend)`` make a function that
        does the same with what it is called with. False where the call is a decoration or an
        entry's (the name is then the wrapper, and holds what it wraps as before)."""
        if not (isinstance(site[0], int) and len(site) in (2, 3)):
            return False
        handed = args.positional or args.star or any(name in apis.TARGET_KEYWORD_NAMES for name, _ in args.keywords)
        if name in apis.COMPILE_FACTORIES or not handed:
            self.add(out, [("X", "torch.compile")])
        else:
            self.add(out, [(WRAPPER, *site)])
        return True

    def call_wrapper(self, site: Any, wrapper: Obj, args: CallArgs, out: int) -> None:
        """A compile call's wrapper called: it runs what the compile call was handed."""
        handed = self.site_args.get(wrapper[1:])
        target = handed.target() if handed is not None else None
        if target is not None:
            self.watch(target, lambda objs: [self.call(site, o, args, out) for o in objs])


def wrapped_by(obj: Obj) -> CompileCall | None:
    """The compile call whose result ``obj`` is, when it is a compile wrapper."""
    return (obj[1], obj[2]) if obj[0] == WRAPPER else None


def wrapper_rows(
    callee_nodes: Mapping[tuple[Any, ...], int], values: list[set[Obj]], saturated: set[int]
) -> tuple[dict[tuple[int, int], set[CompileCall]], set[tuple[int, int]]]:
    """Per call site (``(file, ordinal)``, over a method's copies), the compile calls whose
    wrappers its callee holds, and the sites whose callees hold nothing else."""
    calls: dict[tuple[int, int], set[CompileCall]] = {}
    mixed: set[tuple[int, int]] = set()
    for key, node in callee_nodes.items():
        site = (key[0], key[1])
        held = values[node]
        wrappers = {w for w in map(wrapped_by, held) if w is not None}
        if wrappers:
            calls.setdefault(site, set()).update(wrappers)
        if len(wrappers) < len(held) or node in saturated:
            mixed.add(site)
    return calls, {site for site in calls if site not in mixed}


def escaped_wrappers(outside_arguments: Iterable[CallArgs], values: list[set[Obj]]) -> set[CompileCall]:
    """The compile calls whose wrappers are handed to calls outside the project."""
    return {
        w for args in outside_arguments for node in args.nodes() for w in map(wrapped_by, values[node]) if w is not None
    }
