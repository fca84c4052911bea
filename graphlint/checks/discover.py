"""Paths given on the command line → the Python files to check.

Directories are walked (hidden directories, ``__pycache__`` and virtual environments skipped);
inside a git work tree, what ``.gitignore`` ignores is skipped (asked of ``git check-ignore``, so
every gitignore rule git knows applies); ``exclude`` globs from ``[tool.graphlint]`` apply to
files and directories alike, relative to the project root. A file is listed once, however
many paths (symlinks) reach it.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path


def discover(paths: Iterable[Path], root: Path, exclude: Iterable[str] = ()) -> list[Path]:
    """The ``.py`` files under ``paths``. Files named directly are kept unless excluded; a
    directory named directly is walked even when git ignores it (``.venv/…/site-packages``)."""
    patterns = tuple(exclude)
    given_files = [p for p in paths if not p.is_dir() and p.exists() and not is_excluded(p, root, patterns)]
    given_dirs = [p for p in paths if p.is_dir()]
    ignored_dirs = _gitignored(given_dirs, root)
    found: dict[Path, None] = dict.fromkeys(given_files)
    for directory in given_dirs:
        walked = list(_walk(directory, root, patterns))
        if directory.resolve() not in ignored_dirs:
            dropped = _gitignored(walked, root)
            walked = [f for f in walked if f.resolve() not in dropped]
        found.update(dict.fromkeys(walked))
    return _once_per_file(found)


def _once_per_file(paths: Iterable[Path]) -> list[Path]:
    """One path per file: a file reached twice (through a symlinked directory or file, or
    named twice) is checked and reported once, under the first path that reached it."""
    seen: set[Path] = set()
    unique = []
    for path in paths:
        try:
            real = path.resolve()
        except (OSError, RuntimeError):  # a symlink loop
            real = path
        if real not in seen:
            seen.add(real)
            unique.append(path)
    return unique


def is_excluded(path: Path, root: Path, patterns: tuple[str, ...]) -> bool:
    if not patterns:
        return False
    relative = _relative(path, root)
    parts = relative.split("/")
    return any(
        fnmatch.fnmatch(relative, pattern)
        or any(fnmatch.fnmatch(part, pattern) for part in parts)
        or relative.startswith(pattern.rstrip("/") + "/")
        for pattern in patterns
    )


def _walk(directory: Path, root: Path, patterns: tuple[str, ...]) -> Iterable[Path]:
    for current, dirnames, filenames in os.walk(directory):
        base = Path(current)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d != "__pycache__"
            and not (base / d / "pyvenv.cfg").exists()
            and not is_excluded(base / d, root, patterns)
        )
        for name in sorted(filenames):
            if name.endswith(".py"):
                file = base / name
                if not is_excluded(file, root, patterns):
                    yield file


def _gitignored(paths: list[Path], root: Path) -> set[Path]:
    """The resolved ``paths`` that git ignores (none when ``root`` is not a git work tree)."""
    if not paths or not (root / ".git").exists():
        return set()
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "--stdin", "-z"],
            input="\0".join(str(p.resolve()) for p in paths) + "\0",
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return set()  # no git: nothing is known to be ignored
    if result.returncode != 0:  # 1: none ignored; 128: paths outside the work tree, …
        return set()
    return {Path(p) for p in result.stdout.split("\0") if p}


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def read_source(path: Path) -> bytes:
    """A file's bytes; a FIFO or a device named ``*.py`` would block the run or never end."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "not a regular file")
    return path.read_bytes()
