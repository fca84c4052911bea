"""Where regions start: compile calls and decorators, capture calls, and what they hand over.

Part of the walk of ``extract.py`` (a mixin of its extractor): ``torch.compile(f)``,
``torch._dynamo.optimize(backend)(f)``, ``model.compile()``, ``@torch.compile(...)``, torchair's
backends and ``CompilerConfig`` modes, ``make_graphed_callables`` and the configured entry
points. An entry's targets are value expressions (``facts.EntryFacts``) resolved by the
assignment graph when the project is linked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.facts import EntryFacts, Expr
from graphlint.checks.syntax import dotted_name, keyword, positional, string_value


class EntryPoints:
    """The entry-point half of the extractor (it provides ``qualify``, ``facts``, ``options``,
    the scopes and the entry bookkeeping)."""

    facts: Any
    options: Any
    entry_nodes: dict[int, int]
    entry_sites: list[cst.CSTNode]
    nesting_safe: set[int]
    function_scope: Any
    module_scope: Any
    qualify: Callable[[cst.BaseExpression], str | None]
    _config_scope: Callable[[str], Any]

    def _add_entry(
        self, node: cst.CSTNode, kind: str, *, traced: bool, targets: list[Expr], via: str,
        dynamic: bool | None = None, fullgraph: bool | None = None, replaced: bool = False,
        options: cst.Call | None = None,
    ) -> int:
        """``replaced``: the API is one the framework replaces with a plain call; the entry is
        recorded (the coverage counts it) but is no compile site: nothing nests in it.
        ``options``: the compile call's options; one that may be disabled nests safely."""
        self.facts.entries.append(
            EntryFacts(
                line=0,
                kind=kind,  # type: ignore[arg-type]
                traced=traced,
                scope=self.function_scope.qualname,
                targets=targets,
                dynamic=dynamic,
                fullgraph=fullgraph,
                via=via,  # type: ignore[arg-type]
                replaced=replaced,
            )
        )
        if traced and not replaced:
            self.entry_nodes[id(node)] = len(self.entry_sites)
        if may_be_disabled(options):
            self.nesting_safe.add(len(self.entry_sites))
        self.entry_sites.append(node)
        return len(self.entry_sites) - 1

    def _decorator_entry(self, decorator: cst.Decorator, targets: list[Expr]) -> None:
        expr = decorator.decorator
        name = self.qualify(decorated_callee(expr))
        options = expr if isinstance(expr, cst.Call) else None
        replaced = name in self.options.replaced_entrypoints
        if name in apis.COMPILE_FUNCTIONS:
            kind = self._compile_kind(options) if options is not None else "compiled"
            self._add_entry(
                decorator, kind, traced=True, targets=targets, via="decorator", options=options,
                dynamic=flag_option(options, "dynamic"), fullgraph=flag_option(options, "fullgraph"), replaced=replaced,
            )
        elif name in self.options.capture_entrypoints:
            self._add_entry(decorator, "capture", traced=False, targets=targets, via="config")
        elif name in self.options.compile_entrypoints:
            entry = self._add_entry(decorator, "compiled", traced=True, targets=targets, via="config", replaced=replaced)
            if name in self.options.nesting_safe_entrypoints:
                self.nesting_safe.add(entry)

    def _note_call_entry(self, node: cst.Call, ordinal: int, callee: str | None) -> None:
        """The entry point a call is, if any: a compile call (``torch.compile(f)``, ...),
        ``make_graphed_callables(f)``, or a configured capture or compile entry point."""
        targets = self._compile_targets(node, ordinal)
        handed = any(arg.keyword is None for arg in node.args)
        if targets is not None:
            options = node.func if isinstance(node.func, cst.Call) else node
            self._add_entry(
                node, self._compile_kind(options), traced=True, targets=targets, dynamic=flag_option(options, "dynamic"),
                fullgraph=flag_option(options, "fullgraph"), via="call", replaced=self._replaced_compile(node), options=options,
            )
        # A call with keywords only hands over nothing: ``support_torch_compile(dynamic=...)``
        # makes the decorator that is the entry point.
        elif handed and callee in apis.MAKE_GRAPHED_CALLABLES:
            self._add_entry(node, "capture", traced=False, targets=[["arg", ordinal]], via="call")
        elif handed and callee in self.options.capture_entrypoints:
            self._add_entry(node, "capture", traced=False, targets=[["arg", ordinal]], via="config")
        elif handed and callee in self.options.compile_entrypoints:
            entry = self._add_entry(
                node, "compiled", traced=True, targets=[["arg", ordinal]], via="config",
                replaced=callee in self.options.replaced_entrypoints,
            )
            if callee in self.options.nesting_safe_entrypoints:
                self.nesting_safe.add(entry)

    def _compile_targets(self, call: cst.Call, ordinal: int) -> list[Expr] | None:
        """What ``call`` hands to dynamo when it is a compile call (None when it is not):
        ``torch.compile(f)``, ``torch._dynamo.optimize(backend)(f)``, ``model.compile()``."""
        func = call.func
        if isinstance(func, cst.Call):  # optimize(backend)(f), torch.compile(mode=...)(f)
            inner = self.qualify(func.func)
            if inner in apis.COMPILE_FACTORIES or (inner in apis.COMPILE_FUNCTIONS and not handed_target(func, inner)):
                # what the factory returns takes its target by position or by its keyword
                return [["arg", ordinal]] if positional(call) or _target_keyword(call) else []
            return None
        callee = self.qualify(func)
        if callee in apis.COMPILE_FACTORIES:
            return None  # the backend-taking half of optimize(backend)(f)
        if callee in apis.COMPILE_FUNCTIONS:
            # Without a target, ``torch.compile(mode=...)`` makes a decorator.
            return [["arg", ordinal]] if handed_target(call, callee) else None
        if isinstance(func, cst.Attribute) and func.attr.value == "compile" and _module_compile_call(call):
            # ``nn.Module.compile(**options)``; a module imported by name is not a model.
            receiver = dotted_name(func.value)
            if receiver is None or receiver.split(".", 1)[0] not in self.facts.imports:
                return [["receiver", ordinal]]
        return None

    def _replaced_compile(self, call: cst.Call) -> bool:
        """Whether ``call`` (a compile call) goes through an API the framework replaces with a
        plain call: ``torch.compile(f)`` and ``torch.compile(mode=...)(f)`` alike."""
        func = call.func.func if isinstance(call.func, cst.Call) else call.func
        return self.qualify(func) in self.options.replaced_entrypoints

    def _compile_kind(self, options: cst.Call) -> Literal["compiled", "capture"]:
        """Whether the compile options ask for graph capture (mode, backend, torchair config)."""
        if self.qualify(options.func) in apis.COMPILE_FACTORIES:  # optimize(backend)
            backend_arg = positional(options)[0] if positional(options) else keyword(options, "backend")
            return "capture" if backend_arg and self._backend_captures(backend_arg.value) else "compiled"
        mode = keyword(options, "mode")
        if mode is not None and string_value(mode.value) in apis.CAPTURE_MODES:
            return "capture"
        backend = keyword(options, "backend")
        if backend is not None and self._backend_captures(backend.value):
            return "capture"
        config = keyword(options, "config")  # torchair.inference.cache_compile(fn, config=cfg)
        return "capture" if config is not None and self._config_captures(config.value) else "compiled"

    def _backend_captures(self, backend: cst.BaseExpression | None) -> bool:
        if backend is None:
            return False
        if string_value(backend) in apis.CAPTURE_BACKENDS:
            return True
        if isinstance(backend, cst.Call) and self.qualify(backend.func) in apis.NPU_BACKEND_FACTORIES:
            config = keyword(backend, "compiler_config")
            return config is not None and self._config_captures(config.value)
        if isinstance(backend, cst.Name):
            for scope in (self.function_scope, self.module_scope):
                if backend.value in scope.backends:
                    config_name = scope.backends[backend.value]
                    return config_name is not None and self._config_captures(cst.Name(config_name))
        return False

    def _config_captures(self, config: cst.BaseExpression) -> bool:
        if isinstance(config, cst.Name):
            return self._config_scope(config.value).configs.get(config.value, False)
        return False


def handed_target(call: cst.Call, api: str) -> bool:
    """Whether the compile API call ``call`` is handed its target: ``torch.compile(f)`` or
    ``torch.compile(model=f)``, not ``torch.compile(mode=...)`` (which makes a decorator)."""
    name = apis.COMPILE_TARGET_KEYWORDS.get(api)
    return bool(positional(call)) or (name is not None and keyword(call, name) is not None)


def _target_keyword(call: cst.Call) -> bool:
    return any(arg.keyword is not None and arg.keyword.value in apis.TARGET_KEYWORD_NAMES for arg in call.args)


def decorated_callee(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.func if isinstance(expr, cst.Call) else expr


def may_be_disabled(call: cst.Call | None) -> bool:
    """``torch.compile(..., disable=flag)`` with ``flag`` not the literal ``False``: the compile
    may be off where it runs (sglang passes ``disable=_is_npu``: on an NPU the function runs as
    it is), so it claims no nesting (GL101)."""
    arg = keyword(call, "disable") if call is not None else None
    return arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "False")


def flag_option(call: cst.Call | None, name: str) -> bool | None:
    """``torch.compile(..., dynamic=True)``: a keyword given as ``True`` / ``False``."""
    arg = keyword(call, name) if call is not None else None
    if arg is None or not isinstance(arg.value, cst.Name):
        return None
    return {"True": True, "False": False}.get(arg.value.value)


def _module_compile_call(call: cst.Call) -> bool:
    """Whether ``x.compile(...)`` can be ``nn.Module.compile``: it takes only torch.compile's
    keywords (an FX backend's ``compile(graph, inputs)`` or a DSL's ``compile(src)`` does not)."""
    return all(arg.keyword is not None and arg.keyword.value in apis.MODULE_COMPILE_KEYWORDS for arg in call.args)
