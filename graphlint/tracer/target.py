"""Find what to trace in a TARGET: a Python file or ``module:factory`` (the design's three modes).

In a file, in this order: ``--entry NAME`` or ``graphlint_target()`` returning ``(fn, args)``,
``(fn, args, kwargs)`` or ``{"fn": fn, "inputs": [args, ...], "kwargs": {...}}``; else the module
attributes ``model`` and ``example_inputs``; else script mode: the file runs as ``__main__`` with
``torch.compile`` intercepted, and each callable it compiles is traced with the inputs of its
first calls. Loading runs in the worker process (the callable cannot cross processes).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import runpy
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphlint.tracer.stages.base import TraceTarget

SCRIPT_CALLS_KEPT = 3  # inputs of the first calls of each compiled callable (surfaces recompiles)


class TargetError(Exception):
    """The target could not be loaded; the message is a paragraph meant for the user.
    ``finding`` (its JSON) is set when the target's own code ran and failed while loading (it
    raised, or its factory returned the wrong shape of thing): that is a finding at the user's
    line, reported like any other, not only a usage error."""

    def __init__(self, message: str, finding: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.finding = finding


def load_target(spec: str, entry: str | None = None, script_args: list[str] | None = None) -> TraceTarget:
    """Load ``spec`` (a file path or ``module:factory``) into a ``TraceTarget``."""
    from graphlint.tracer.capture.library_kernels import keep_library_kernels

    keep_library_kernels()  # before the target's code registers its ops: the audit looks inside them
    path = Path(spec)
    if path.suffix == ".py" or path.exists():
        return _load_file(path, entry, script_args or [])
    if ":" in spec:
        return _load_factory(spec)
    raise TargetError(
        f"graphlint trace: cannot find target {spec!r}. A target is a Python file "
        "(samples/model.py) or a module and a factory function (package.module:make_target)."
    )


def file_target_user_files(spec: str) -> list[str] | None:
    """The user files a file target will have once loaded (the file, resolved, as ``_load_file``
    gives it), known before anything is run; None for ``module:factory`` (its file is known once
    the module is imported) or a file that is not there (loading it fails)."""
    path = Path(spec)
    return [str(path.resolve())] if path.is_file() else None


def _load_file(path: Path, entry: str | None, script_args: list[str]) -> TraceTarget:
    if not path.is_file():
        raise TargetError(
            f"graphlint trace: {path} is not a file. A target is a Python file or module:factory."
        )
    name = str(path)
    path = path.resolve()
    # Script mode is decided before executing anything: a script's top level is its main run.
    if entry is None and not _defines_target(path.read_text(encoding="utf-8", errors="replace")):
        return _run_script(path, name, script_args)
    module_name = "__graphlint_target__"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(path.parent))
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise TargetError(
            f"graphlint trace: importing {name} raised {type(exc).__name__}: {exc}. "
            "Fix the import error first; graphlint runs the file's top level to find the target."
        ) from exc
    user_files = {str(path)}
    if entry is not None:
        factory = getattr(module, entry, None)
        if not callable(factory):
            raise TargetError(
                f"graphlint trace: {name} has no callable {entry!r} (asked for by --entry). "
                "The entry must be a function returning (fn, args), (fn, args, kwargs) or "
                '{"fn": fn, "inputs": [args, ...], "kwargs": {...}}.'
            )
        return _from_factory_result(factory, name, user_files, f"{name}:{entry}")
    if callable(getattr(module, "graphlint_target", None)):
        return _from_factory_result(module.graphlint_target, name, user_files, f"{name}:graphlint_target")
    return _from_model_attributes(module, name, user_files)


def _defines_target(source: str) -> bool:
    """Whether the file offers a target without running as a script (read, not run)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True  # importing it reports the syntax error as a target error
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return "graphlint_target" in names or {"model", "example_inputs"} <= names


def _load_factory(spec: str) -> TraceTarget:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise TargetError(
            f"graphlint trace: cannot import module {module_name!r} for target {spec!r} "
            f"({type(exc).__name__}: {exc}). Is it on PYTHONPATH?"
        ) from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise TargetError(
            f"graphlint trace: module {module_name!r} has no callable {attr!r}. A module:factory "
            "target names a function returning (fn, args), (fn, args, kwargs) or "
            '{"fn": fn, "inputs": [args, ...], "kwargs": {...}}.'
        )
    module_file = getattr(module, "__file__", None)
    user_files = {os.path.abspath(module_file)} if module_file else set()
    return _from_factory_result(factory, spec, user_files, spec)


def _from_factory_result(factory: Callable[[], Any], name: str, user_files: set[str], what: str) -> TraceTarget:
    """Call the factory and read what it returned."""
    result = factory()
    if isinstance(result, dict) and callable(result.get("fn")):
        inputs = [tuple(args) for args in result.get("inputs") or [()]]
        kwargs = result.get("kwargs") or {}
        return TraceTarget(result["fn"], inputs, [dict(kwargs)] * len(inputs), name, user_files)
    if isinstance(result, tuple) and len(result) in (2, 3) and callable(result[0]):
        kwargs = dict(result[2]) if len(result) == 3 else {}
        return TraceTarget(result[0], [tuple(result[1])], [kwargs], name, user_files)
    message = (
        f"{what}() returned {type(result).__name__}; it must return (fn, args), "
        '(fn, args, kwargs) or {"fn": fn, "inputs": [args, ...], "kwargs": {...}}.'
    )
    raise TargetError(f"graphlint trace: {message}", _wrong_shape_finding(factory, message, type(result).__name__))


def _wrong_shape_finding(factory: Callable[[], Any], message: str, returned: str) -> dict[str, Any] | None:
    """The load-error finding at the factory's ``def`` line (its JSON); None when its source is
    not to be found (a builtin, a ``functools.partial``)."""
    from graphlint.tracer.classify.codes import trace_code
    from graphlint.tracer.findings import Finding

    try:
        file = inspect.getsourcefile(factory)
        _, line = inspect.getsourcelines(factory)
    except (OSError, TypeError):
        return None
    if file is None:
        return None
    finding = Finding(
        layer="model", stage="load", kind="load-error", code=trace_code("load-error"), message=message,
        file=os.path.abspath(file), line=line, details={"returned": returned},
    )
    return finding.to_json()


def _from_model_attributes(module: Any, name: str, user_files: set[str]) -> TraceTarget:
    if not (hasattr(module, "model") and hasattr(module, "example_inputs")):
        raise TargetError(
            f"graphlint trace: {name} has no `graphlint_target()` and not both `model` and "
            "`example_inputs` after import. Add a graphlint_target() returning (fn, args), or "
            "pass --entry NAME."
        )
    model, examples = module.model, module.example_inputs
    if not callable(model):
        raise TargetError(f"graphlint trace: {name}: `model` is a {type(model).__name__}, not callable.")
    if isinstance(examples, list):
        inputs = [tuple(e) if isinstance(e, tuple) else (e,) for e in examples]
    else:
        inputs = [tuple(examples) if isinstance(examples, tuple) else (examples,)]
    return TraceTarget(model, inputs, [{} for _ in inputs], name, user_files)


@dataclass
class _CompiledCallable:
    """A callable the script passed to ``torch.compile``, and the inputs of its first calls."""

    fn: Callable[..., Any]
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)


def _run_script(path: Path, name: str, script_args: list[str]) -> TraceTarget:
    compiled: list[_CompiledCallable] = []
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *script_args]
    sys.path.insert(0, str(path.parent))
    try:
        with _intercept_compile(compiled):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise TargetError(f"graphlint trace: script {name} exited with status {exc.code}.") from exc
    except Exception as exc:
        if not any(c.calls for c in compiled):
            raise TargetError(
                f"graphlint trace: running script {name} raised {type(exc).__name__}: {exc} "
                "before any compiled callable was called."
            ) from exc
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    called = [c for c in compiled if c.calls]
    if not called:
        raise TargetError(
            f"graphlint trace: {name} defines no `graphlint_target()`, no `model` and "
            "`example_inputs`, and running it as a script called no function passed to "
            "`torch.compile`. Add a graphlint_target() returning (fn, args), or pass --entry NAME."
        )
    fn, inputs, kwargs = _script_target(called)
    return TraceTarget(fn, inputs, kwargs, name, {str(path)})


def _script_target(
    called: list[_CompiledCallable],
) -> tuple[Callable[..., Any], list[tuple[Any, ...]], list[dict[str, Any]]]:
    """One compiled callable is traced as itself; several are traced by one function calling
    each in turn with its recorded inputs (so every compile of the script is traced)."""
    if len(called) == 1:
        only = called[0]
        return only.fn, [a for a, _ in only.calls], [k for _, k in only.calls]

    def run_script_compiled_callables(call_index: int) -> list[Any]:
        outputs = []
        for record in called:
            args, kwargs = record.calls[min(call_index, len(record.calls) - 1)]
            outputs.append(record.fn(*args, **kwargs))
        return outputs

    rounds = max(len(c.calls) for c in called)
    return run_script_compiled_callables, [(i,) for i in range(rounds)], [{} for _ in range(rounds)]


@contextmanager
def _intercept_compile(compiled: list[_CompiledCallable]) -> Iterator[None]:
    """Replace ``torch.compile`` (and ``nn.Module.compile``) so the script runs eagerly while
    each compiled callable records the inputs of its first calls."""
    import torch

    original_compile, original_module_compile = torch.compile, torch.nn.Module.compile

    def recording(fn: Callable[..., Any], call: Callable[..., Any] | None = None) -> Callable[..., Any]:
        """A stand-in for the compiled ``fn``: runs ``call`` (``fn`` itself by default) eagerly."""
        record = _CompiledCallable(fn)
        compiled.append(record)
        run = call or fn

        def recorded_call(*args: Any, **kwargs: Any) -> Any:
            if len(record.calls) < SCRIPT_CALLS_KEPT:
                record.calls.append((_detached(args), _detached(kwargs)))
            return run(*args, **kwargs)

        return recorded_call

    def fake_compile(model: Any = None, **_options: Any) -> Any:
        if model is None:  # decorator with options: @torch.compile(dynamic=True)
            return recording
        return recording(model)

    def fake_module_compile(self: torch.nn.Module, *_args: Any, **_kwargs: Any) -> None:
        # nn.Module.__call__ runs _compiled_call_impl when set, as after a real module.compile()
        self._compiled_call_impl = recording(self, self._call_impl)

    torch.compile = fake_compile  # type: ignore[assignment]
    torch.nn.Module.compile = fake_module_compile  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.compile = original_compile
        torch.nn.Module.compile = original_module_compile


def _detached(value: Any) -> Any:
    """A snapshot of call inputs: tensors cloned, so later in-place updates do not change them."""
    import torch

    return torch.utils._pytree.tree_map(
        lambda v: v.detach().clone().requires_grad_(v.requires_grad) if isinstance(v, torch.Tensor) else v, value
    )
