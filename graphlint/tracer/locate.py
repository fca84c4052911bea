"""Find the user's file and line: in an exception's frames or an FX node's ``stack_trace``.

Never a torch-internal frame: a frame counts as the user's when its file is one of the target's
own files, else when it is outside the Python installation, site-packages and graphlint itself,
else (a model that lives in a library, such as transformers) when it is in a library other than
torch and the standard library.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import sysconfig
import traceback
from collections.abc import Iterable
from types import TracebackType

_FRAME_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_GRAPHLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = tuple(
    {
        os.path.abspath(p)
        for p in (
            sysconfig.get_paths().get("stdlib"),
            sysconfig.get_paths().get("purelib"),
            sysconfig.get_paths().get("platlib"),
            sys.prefix,
            sys.base_prefix,
        )
        if p
    }
)


_TORCH_SPEC = importlib.util.find_spec("torch")  # found, not imported
_TORCH_DIRS = tuple(os.path.abspath(p) for p in (_TORCH_SPEC.submodule_search_locations or [])) if _TORCH_SPEC else ()
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"])


def is_library_file(path: str) -> bool:
    if path.startswith("<"):  # <frozen importlib._bootstrap>, <string>, <eval_with_key>…
        return True
    path = os.path.abspath(path)
    if path.startswith(_GRAPHLINT_DIR + os.sep):
        return True
    if "site-packages" in path or "dist-packages" in path:
        return True
    return any(path.startswith(d + os.sep) for d in _LIBRARY_DIRS)


def is_framework_file(path: str) -> bool:
    """torch, graphlint, the standard library, or code without a file: never the user's line."""
    if path.startswith("<"):
        return True
    path = os.path.abspath(path)
    if any(path.startswith(d + os.sep) for d in (_GRAPHLINT_DIR, *_TORCH_DIRS)):
        return True
    in_site_packages = "site-packages" in path or "dist-packages" in path
    return path.startswith(_STDLIB_DIR + os.sep) and not in_site_packages


def pick_user_frame(
    frames: Iterable[tuple[str, int]], user_files: set[str] | None = None
) -> tuple[str, int] | None:
    """The innermost frame in the user's files, else outside any library, else in a library
    that is not torch nor the standard library; frames are given outermost first."""
    frames = [(f if f.startswith("<") else os.path.abspath(f), n) for f, n in frames]
    if user_files:
        own = [fr for fr in frames if fr[0] in user_files]
        if own:
            return own[-1]
    other = [fr for fr in frames if not is_library_file(fr[0])]
    if other:
        return other[-1]
    model_library = [fr for fr in frames if not is_framework_file(fr[0])]
    return model_library[-1] if model_library else None


def frames_of_stack_trace(stack_trace: str | None) -> list[tuple[str, int]]:
    if not stack_trace:
        return []
    return [(m["file"], int(m["line"])) for m in _FRAME_LINE.finditer(stack_trace)]


def user_line_of_stack_trace(
    stack_trace: str | None, user_files: set[str] | None = None
) -> tuple[str, int] | None:
    """For an FX node: ``node.meta.get("stack_trace")``."""
    return pick_user_frame(frames_of_stack_trace(stack_trace), user_files)


def user_line_of_exception(
    exc: BaseException, user_files: set[str] | None = None
) -> tuple[str, int] | None:
    """Walks the exception, its causes and contexts (``BackendCompilerFailed`` wraps the real one).
    The frames dynamo records on the exception (``real_stack``: the user code it was tracing)
    come first; the Python traceback (where the compiled callable was called) is the fallback."""
    seen: set[int] = set()
    traced: list[tuple[str, int]] = []
    raised: list[tuple[str, int]] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        real_stack = getattr(current, "real_stack", None)
        if real_stack:
            traced.extend((fs.filename, fs.lineno or 0) for fs in real_stack)
        tb: TracebackType | None = current.__traceback__
        raised.extend((fs.filename, fs.lineno or 0) for fs in traceback.extract_tb(tb))
        current = current.__cause__ or current.__context__ or getattr(current, "inner_exception", None)
    return pick_user_frame(traced, user_files) or pick_user_frame(raised, user_files)


def display_path(path: str) -> str:
    """Relative to the working directory when the file is under it, so reports are portable."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative
