"""``*args`` and ``**kwargs`` kept element by element: a position or a keyword name per value.

A function that hands its own ``*args, **kwargs`` on (``def forward(self, *args, **kwargs):
return self._forward_method(*args, **kwargs)``, a decorator's wrapper, ``super().__init__(*args,
**kwargs)``) is shared by every caller. Held as one value each, every caller's arguments reach
every parameter of every function they are handed to: in vLLM, the tensors of each custom op
reached every other op's parameters, and the layers passed by keyword reached them too. Here a
function's ``*args`` is one node per position and its ``**kwargs`` one node per keyword name
(``key``), plus one node for the values whose position or name is not known (``None``: a ``*xs``
or ``**d`` of unknown contents), which still go everywhere. Handing them on (``CallArgs.forwarded_*``)
sends position ``i`` to the callee's ``offset + i``-th positional parameter and keyword ``k``
to the parameter named ``k``. Every keyed node also feeds the parameter's own node, so
``kwargs.get("x")`` and ``len(args)`` read what they always read.
"""

from __future__ import annotations

from collections.abc import Callable

from graphlint.checks.value_graph import CallArgs, Rest, ValueGraph

Key = int | str | None  # a position of ``*args``, a keyword of ``**kwargs``, or not known
# Positions past this are not known: a function that forwards its ``*args`` to itself behind
# one more argument (``f(x, *args)`` inside ``f``) would make new positions for ever.
MAX_POSITION = 32


class RestArguments(ValueGraph):
    """The keyed nodes of ``*args``/``**kwargs`` parameters, and binding arguments to them."""

    rest_nodes: dict[Rest, dict[Key, int]]
    rest_watchers: dict[Rest, list[Callable[[Key, int], None]]]

    def rest_node(self, rest: Rest, key: Key) -> int:
        """The node of position or keyword ``key`` of the ``*args``/``**kwargs`` ``rest``."""
        if isinstance(key, int) and key >= MAX_POSITION:
            key = None
        nodes = self.rest_nodes.setdefault(rest, {})
        node = nodes.get(key)
        if node is None:
            node = nodes[key] = self.node()
            self.edge(node, self.variable(rest[0], f"{rest[1]}.{rest[2]}"))
            for react in list(self.rest_watchers.get(rest, ())):
                react(key, node)
        return node

    def watch_rest(self, rest: Rest, react: Callable[[Key, int], None]) -> None:
        """``react`` to each key of ``rest``: those known now and those found later."""
        self.rest_watchers.setdefault(rest, []).append(react)
        for key, node in list(self.rest_nodes.get(rest, {}).items()):
            react(key, node)

    def bind_forwarded(self, file: int, qualname: str, params: list[tuple[str, str]], args: CallArgs) -> None:
        """A caller's forwarded ``*args``/``**kwargs`` (``args.forwarded_*``) → the parameters
        of ``qualname``: by position after the plain positional arguments, and by name."""
        positional = [name for name, kind in params if kind in ("o", "p")]
        varargs = next((name for name, kind in params if kind == "*"), None)
        varkw = next((name for name, kind in params if kind == "**"), None)
        by_keyword = {name for name, kind in params if kind in ("p", "k")}
        offset = len(args.positional)

        def parameter(name: str) -> int:
            return self.variable(file, f"{qualname}.{name}")

        def position(key: Key, node: int) -> None:
            if key is None or not isinstance(key, int):
                for name in positional[offset:]:
                    self.edge(node, parameter(name))
                if varargs is not None:
                    self.edge(node, self.rest_node((file, qualname, varargs), None))
            elif offset + key < len(positional):
                self.edge(node, parameter(positional[offset + key]))
            elif varargs is not None:
                self.edge(node, self.rest_node((file, qualname, varargs), offset + key - len(positional)))

        def keyword(key: Key, node: int) -> None:
            if isinstance(key, str) and key in by_keyword:
                self.edge(node, parameter(key))
            elif isinstance(key, str):
                if varkw is not None:
                    self.edge(node, self.rest_node((file, qualname, varkw), key))
            else:
                for name, kind in params:
                    if kind == "k" or (kind == "p" and name in positional[offset:]):
                        self.edge(node, parameter(name))
                if varkw is not None:
                    self.edge(node, self.rest_node((file, qualname, varkw), None))

        for rest in args.forwarded_star:
            self.watch_rest(rest, position)
        for rest in args.forwarded_keywords:
            self.watch_rest(rest, keyword)

    def plain(self, args: CallArgs) -> CallArgs:
        """The same arguments with forwarded ``*args``/``**kwargs`` as one value each (where
        their order among other arguments is lost: a partial's arguments before a call's)."""
        if not args.forwarded_star and not args.forwarded_keywords:
            return args
        whole = lambda rest: self.variable(rest[0], f"{rest[1]}.{rest[2]}")  # noqa: E731
        return CallArgs(
            args.positional,
            [*args.star, *map(whole, args.forwarded_star)],
            args.keywords,
            [*args.double_star, *map(whole, args.forwarded_keywords)],
        )
