"""Import torchair from a torch_npu wheel or folder on a machine without CANN, and undo it all.

torchair is Python on top of three kinds of native code: ``torch_npu`` (``torch_npu._C`` needs
CANN), torchair's own extension modules (``torchair/core/_torchair*.so`` …) and GE itself. The
FX → GE translation graphlint wants (converters building a ``GeGraph`` protobuf) needs none of
them, so inside ``offline_torchair(source)``:

- an import hook resolves ``import torchair`` to the sources of ``source`` and answers
  ``torch_npu``, ``torch_npu.*`` and the extension modules with stand-in modules whose every
  attribute is a stand-in (``stand_in.py``: the real answer where it is known, a refusal
  naming the stand-in where it is not);
- torchair's error wrapper (``torchair/_utils/error_code.py``) is replaced by one that lets the
  original exception through: the stock one rebuilds the exception from a message that, with
  stand-ins for ``torch_npu``, no longer says what failed.

On exit everything is undone: ``sys.modules`` and ``sys.meta_path`` are restored, the operator
libraries torchair registered are destroyed, the ``_ge_converter`` attributes it puts on torch's
operator objects are removed, and torch attributes it replaced with its own are put back. The
user's code, run later in the same process, never sees torchair.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from graphlint.tracer.torchair.locate import TorchNpuSource
from graphlint.tracer.torchair.stand_in import LOG, StandIn

_STAND_IN_ROOTS = ("torch_npu",)


class _StandInModule(types.ModuleType):
    def __getattr__(self, attr: str) -> StandIn:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return StandIn(f"{self.__name__}.{attr}")


class _StandInLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StandInModule(spec.name)
        module.__path__ = []  # a package, so that ``import torch_npu.npu.utils`` works too
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _PatchingLoader(importlib.abc.Loader):
    """Runs a module's own loader, then a patch on the fresh module."""

    def __init__(self, inner: importlib.abc.Loader, patch: Callable[[types.ModuleType], None]) -> None:
        self._inner = inner
        self._patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._inner.exec_module(module)
        self._patch(module)


def _let_original_exceptions_through(error_code: types.ModuleType) -> None:
    def pretty_error_msg(func: Callable[..., Any]) -> Callable[..., Any]:
        return func

    error_code.pretty_error_msg = pretty_error_msg


# Modules of torchair patched as they load: name → patch.
_MODULE_PATCHES: dict[str, Callable[[types.ModuleType], None]] = {
    "torchair._utils.error_code": _let_original_exceptions_through,
}


class _OfflineFinder(importlib.abc.MetaPathFinder):
    def __init__(self, torchair_parent: Path, native_modules: set[str]) -> None:
        self._torchair_parent = str(torchair_parent)
        self._native = native_modules

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        root = fullname.split(".", 1)[0]
        if root in _STAND_IN_ROOTS or fullname in self._native:
            return importlib.util.spec_from_loader(fullname, _StandInLoader(), is_package=True)
        if root != "torchair":
            return None
        search = [self._torchair_parent] if fullname == "torchair" else path
        spec = importlib.machinery.PathFinder.find_spec(fullname, search)
        if spec is not None and fullname in _MODULE_PATCHES and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader, _MODULE_PATCHES[fullname])
        return spec


@contextmanager
def offline_torchair(source: TorchNpuSource) -> Iterator[types.ModuleType]:
    """``import torchair`` from ``source`` with stand-ins for its native parts; yields the module.

    Import errors propagate (the caller falls back to the static registry); whatever happens,
    the process is left as it was found."""
    torchair_dir = source.importable_torchair_dir()
    saved_modules = dict(sys.modules)
    saved_meta_path = list(sys.meta_path)
    torch_attributes = _TorchAttributeSnapshot()
    libraries: list[torch.library.Library] = []
    original_library_init = torch.library.Library.__init__

    def recording_init(self: torch.library.Library, *args: Any, **kwargs: Any) -> None:
        original_library_init(self, *args, **kwargs)
        if _registered_by(sys._getframe(1), torchair_dir):
            libraries.append(self)

    finder = _OfflineFinder(torchair_dir.parent, source.native_modules())
    LOG.clear()  # this session's refusals and assumptions only
    for name in [n for n in sys.modules if belongs_to_torchair(n)]:
        del sys.modules[name]  # an earlier import (ours or the user's) must not be reused
    sys.meta_path.insert(0, finder)
    torch.library.Library.__init__ = recording_init  # type: ignore[method-assign]
    try:
        yield importlib.import_module("torchair")
    finally:
        torch.library.Library.__init__ = original_library_init  # type: ignore[method-assign]
        sys.meta_path[:] = saved_meta_path
        for library in reversed(libraries):
            defined = set(library._op_defs)
            library._destroy()
            _forget_cached_packets(defined)
        _forget_torchair_on_operators()
        torch_attributes.restore()
        _restore_modules(saved_modules, torchair_dir)
        importlib.invalidate_caches()


def belongs_to_torchair(module_name: str) -> bool:
    """``torchair.*``, or ``torch_npu.*`` (its stand-ins, or the real one)."""
    return module_name.split(".", 1)[0] in ("torchair", *_STAND_IN_ROOTS)


_TORCH_LIBRARY_API = tuple(
    str(Path(torch.__file__).parent / part) for part in ("library.py", "_library" + os.sep)
)


def _registered_by(frame: types.FrameType | None, torchair_dir: Path) -> bool:
    """Whether the code that asked for a new operator library is torchair's, looking past
    torch's own library API (``torch.library.custom_op`` creates libraries on its caller's
    behalf). torch's own modules, first imported during the session, create libraries too:
    those must survive it."""
    inside = str(torchair_dir) + os.sep
    while frame is not None and frame.f_code.co_filename.startswith(_TORCH_LIBRARY_API):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(inside)


def _restore_modules(saved: dict[str, types.ModuleType], torchair_dir: Path) -> None:
    """Put back every module entry that existed before and drop torchair, torch_npu and the
    stand-ins. Other libraries torchair imported (parts of torch, protobuf, numpy) stay loaded:
    they are the modules the user's own imports get, and dropping them would leave two copies
    of a module (and of its classes) in the process."""
    inside = str(torchair_dir.parent)
    for name, module in list(sys.modules.items()):
        if name in saved:
            continue
        file = getattr(module, "__file__", None) or ""
        if belongs_to_torchair(name) or file.startswith(inside):
            del sys.modules[name]
    for name, module in saved.items():
        if sys.modules.get(name) is not module:
            sys.modules[name] = module


def _forget_cached_packets(qualnames: set[str]) -> None:
    """Drop ``torch.ops.<ns>.<name>`` for operators that no longer exist. torch's own clean-up
    misses names defined from a schema with leading whitespace (torchair writes them as
    triple-quoted strings: ``"air::\\n        scope_enter"``), and a cached packet of a removed
    operator crashes whoever touches it."""
    for qualname in qualnames:
        namespace_name, _, name = qualname.partition("::")
        name = name.strip().split(".", 1)[0]
        namespace = vars(torch.ops).get(namespace_name)
        if isinstance(namespace, torch._ops._OpNamespace) and name in vars(namespace):
            delattr(namespace, name)
            if name in namespace._dir:
                namespace._dir.remove(name)


def _forget_torchair_on_operators() -> None:
    """Remove what torchair hung on torch's operator objects: its converters
    (``torch.ops.aten.add.Tensor._ge_converter``) and its Python kernels (``py_impl``)."""
    for namespace in list(vars(torch.ops).values()):
        if not isinstance(namespace, torch._ops._OpNamespace):
            continue
        for packet in list(vars(namespace).values()):
            if not isinstance(packet, torch._ops.OpOverloadPacket):
                continue
            for overload in list(vars(packet).values()):
                if isinstance(overload, torch._ops.OpOverload):
                    _forget_torchair_on(overload)


def _forget_torchair_on(overload: torch._ops.OpOverload) -> None:
    if _comes_from_torchair(vars(overload).get("_ge_converter")):
        del overload._ge_converter
    tables = (overload.py_kernels, overload.python_key_table, overload.functorch_table)
    changed = False
    for table in tables:
        for key in [k for k, kernel in table.items() if _comes_from_torchair(kernel)]:
            del table[key]
            changed = True
    if changed:
        overload._dispatch_cache.clear()


class _TorchAttributeSnapshot:
    """The attributes of torch's modules, to put back any that torchair replaced with its own
    (``torch.distributed.all_reduce = npu_allreduce_patch_dist`` and the like)."""

    def __init__(self) -> None:
        self._saved = {
            name: dict(vars(module))
            for name, module in list(sys.modules.items())
            if isinstance(module, types.ModuleType) and (name == "torch" or name.startswith("torch."))
        }

    def restore(self) -> list[tuple[types.ModuleType, str, Any]]:
        """Put the attributes back; returns what was replaced: (module, attribute, torchair's value)."""
        replaced = []
        for name, before in self._saved.items():
            module = sys.modules.get(name)
            if module is None:
                continue
            namespace = vars(module)
            for attr, value in list(namespace.items()):
                if before.get(attr, _MISSING) is value or not _comes_from_torchair(value):
                    continue
                replaced.append((module, attr, value))
                if attr in before:
                    setattr(module, attr, before[attr])
                else:
                    delattr(module, attr)
        return replaced


_MISSING = object()


def _comes_from_torchair(value: Any) -> bool:
    if value is None:
        return False
    module_name = getattr(value, "__module__", None)
    if not isinstance(module_name, str):
        module_name = getattr(type(value), "__module__", "")
    return isinstance(module_name, str) and module_name.split(".", 1)[0] in ("torchair", *_STAND_IN_ROOTS)
