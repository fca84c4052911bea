"""``isinstance`` guards on returns, judged per call, and carried through forwarding functions.

``if isinstance(layer, FusedMoE): return MoeMethod()`` reaches only the calls that hand
``layer`` a ``FusedMoE`` (or a value graphlint does not know). Context-insensitive, a function
that forwards its own parameter and returns the result as it is (vLLM's
``DeepseekV4Fp8Config.get_quant_method(self, layer, prefix)`` ending in ``return
super().get_quant_method(layer, prefix)``) hands the guarded function its *shared* parameter,
which holds every caller's layer: once any caller passes a ``FusedMoE``, the guard opened for all
of them, and the LM head got the MoE method. Here such a guard is carried up instead: the
forwarding function's own calls are judged by the same classes on what each hands to the
forwarded parameter, again and again up a chain of such functions. A forwarding return under an
``isinstance`` guard of its own (``MoeWNA16Config``: ``elif isinstance(layer, LinearBase): return
AutoGPTQConfig(...).get_quant_method(layer, prefix)``) carries both: a call gets the inner
return only if what it hands over can pass both tests (each judged on its own: a value that
passes one and a value that passes the other open it too, which over-approximates). Sound: the
parameter is one nothing in the function rebinds, so each call's argument is exactly what the
guarded function tests, and the call's result is what the function returns. A call whose
argument is not known (``*xs``) opens the guard, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from graphlint.checks.file_tables import per_file
from graphlint.checks.facts import FALSY, Expr
from graphlint.checks.pass_through import PassThrough
from graphlint.checks.value_graph import EXTERNAL_VALUE, OUTSIDE_ANY, CallArgs, Obj

Params = list[tuple[str, str]]
Test = tuple[str, bool, int]  # (parameter, negated, node of the classes)
Guard = tuple[str, tuple[Test, ...], int]  # (variables' prefix, tests all to pass, node of the guarded return)
Call = tuple[Params, CallArgs, int, tuple[Any, str]]  # a bound call: parameters, arguments, result, (site, prefix)


class InstanceGuards(PassThrough):
    forwarded_guards: dict[tuple[int, str], list[Guard]]
    forward_queue: list[tuple[Guard, Call]]
    forwarding: bool  # the queue is being worked through
    guard_classes: dict[tuple[int, int], int | None]  # (file, ordinal) of a guarded call → its test's classes
    classes: Any
    values: list[set[Obj]]
    argument: Callable[[Params, CallArgs, str], int | None]

    def return_if_instance(self, file: int, given: int | None, classes: Expr, returned: int, out: int, site: Any = None) -> None:
        """``if isinstance(p, C): return x``: the call gets ``x`` only if it hands ``p`` an
        instance of ``C``, or a value graphlint does not know (what an outside call returned,
        or an argument it cannot single out, ``f(*xs)``): unknown opens the guard. An instance
        of a named outside class is no instance of a project class. An argument that never
        holds a value opens nothing: the answer for what is not known is nothing, as for an
        unresolved call. ``["not", C]`` (the ``else`` of the test, or what follows ``if not
        isinstance(p, C): return``): a value that is no instance of ``C``; each is judged by the
        classes known when it arrives (one learnt later can only have opened more)."""
        negated = classes[0] == "not"
        named = self.compile(file, classes[1] if negated else classes)  # type: ignore[attr-defined]
        if given is None or named is None:
            self.edge(returned, out)
            return
        self._judge([(given, negated, named)], returned, out, site)

    def forward_guards(self, qualname: str, call: Call, file: int) -> None:
        """A new call of ``qualname`` (``bind``): judged by the guards it forwards."""
        self._forward_all([(guard, call) for guard in self.forwarded_guards.get((file, qualname), ())])

    def _forward_all(self, work: list[tuple[Guard, Call]]) -> None:
        """Each (guard, call) judged in turn: a chain of forwarding functions is walked by a
        queue, not by nested calls (vLLM's quantization configs forward to each other, in
        hundreds of receiver copies)."""
        self.forward_queue.extend(work)
        if self.forwarding:
            return
        self.forwarding = True
        try:
            while self.forward_queue:
                self._forward(*self.forward_queue.pop())
        finally:
            self.forwarding = False

    def _judge(self, tests: list[tuple[int, bool, int]], returned: int, out: int, site: Any) -> None:
        """``out`` gets ``returned`` once every test (argument node, negated, classes node) can
        pass; or, at a call its function returns as it is, the function's own calls are judged."""
        forwarding = self._forwarding(site, [given for given, _, _ in tests])
        if forwarding is not None:  # ``return g(p)``: the guard speaks of each call's own ``p``
            file, qualname, prefix, names, own = forwarding
            # a set of tests: a chain of forwarding functions that comes back to one (recursion)
            # forwards nothing new there
            carried = {*own, *((name, negated, named) for name, (_, negated, named) in zip(names, tests))}
            guard = (prefix, tuple(sorted(carried)), returned)
            guards = self.forwarded_guards.setdefault((file, qualname), [])
            if guard not in guards:
                guards.append(guard)
                self._forward_all([(guard, call) for call in self.pass_sites.get((file, qualname), ())])
            return
        passed: set[int] = set()

        def pass_test(index: int) -> None:
            if index not in passed:
                passed.add(index)
                if len(passed) == len(tests):
                    self.edge(returned, out)

        for index, (given, negated, named) in enumerate(tests):
            self._watch_test(given, negated, named, lambda index=index: pass_test(index))

    def _watch_test(self, given: int, negated: bool, named: int, passes: Callable[[], None]) -> None:
        def fits(objs: Iterable[Obj], cls: Obj) -> None:
            if any(self.instance_of(obj, cls) is not False for obj in objs):
                passes()

        def fits_none(objs: Iterable[Obj]) -> None:
            known = list(self.values[named])
            if any(all(self.instance_of(obj, cls) is not True for cls in known) for obj in objs):
                passes()

        if negated:  # the argument is judged once some class is known
            watching: list[bool] = []

            def start(found: Iterable[Obj]) -> None:
                if not watching:
                    watching.append(True)
                    self.watch(given, fits_none)

            self.watch(named, start)
            return
        self.watch(named, lambda found: [self.watch(given, lambda objs, cls=cls: fits(objs, cls)) for cls in found])

    def _forwarding(self, site: Any, given: list[int]) -> tuple[int, str, str, list[str], list[Test]] | None:
        """Where call ``site`` is returned as it is by its function and every node in ``given``
        is that function's own parameter (nothing rebinds it): (file, function, its variables'
        prefix, the parameters, the ``isinstance`` test the return is under, if any)."""
        found = [self.returned_parameter(site, node, guarded=True) for node in given]
        if not found or any(f is None for f in found) or len({f[:3] for f in found}) != 1:  # type: ignore[index]
            return None
        file, qualname, prefix, _ = found[0]  # type: ignore[misc]
        own: list[Test] = []
        guard = self.guarded_calls[file].get(site[1])
        if guard is not None:
            key = (file, site[1])
            if key not in self.guard_classes:  # one node per test, so that a guard is kept once
                self.guard_classes[key] = self.compile(file, guard[1])  # type: ignore[attr-defined]
            named = self.guard_classes[key]
            if named is None:
                return None
            own.append((guard[0], False, named))
        return file, qualname, prefix, [f[3] for f in found], own  # type: ignore[index]

    @per_file
    def guarded_calls(self, file: int) -> dict[int, tuple[str, Expr]]:
        """Per file, the calls returned as they are under an ``isinstance`` test of a parameter
        (not its ``else``): ordinal → (parameter, classes)."""
        flow = self.files[file].facts.flow  # type: ignore[attr-defined]
        keys = {key: (parameter, classes) for guards in flow.guarded.values() for parameter, classes, key in guards}
        calls: dict[int, tuple[str, Expr]] = {}
        for target, value in flow.assigns:
            guard = keys.get(target[1]) if target[0] == "v" else None
            if guard is not None and value[0] == "c" and isinstance(value[1], int) and guard[1] != FALSY and guard[1][0] != "not":
                calls[value[1]] = guard
        return calls

    def _forward(self, guard: Guard, call: Call) -> None:
        params, args, out, (site, prefix) = call
        if prefix != guard[0]:  # another copy of the function: its own ``p`` is judged there
            return
        tests = []
        for name, negated, named in guard[1]:
            given = self.argument(params, args, name)
            if given is None:  # not known: this test opens
                continue
            tests.append((given, negated, named))
        if not tests:
            self.edge(guard[2], out)
        else:
            self._judge(tests, guard[2], out, site)

    def instance_of(self, obj: Obj, cls: Obj) -> bool | None:
        """Whether ``obj`` is an instance of class ``cls`` (None: not known)."""
        if obj in (EXTERNAL_VALUE, OUTSIDE_ANY) or cls == OUTSIDE_ANY or cls[0] not in ("C", "X"):
            return None
        if obj[0] == "I":
            return cls in self.classes.mro(("C", obj[1], obj[2]))
        return False if cls[0] == "C" else None
