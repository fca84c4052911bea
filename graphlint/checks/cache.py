"""Facts cached by file content, as JSON, so a re-run parses only what changed.

Key: the SHA-256 of the file's bytes, under a directory named by a fingerprint of everything
that shapes facts: graphlint's version, the checker's own source files (a changed rule changes
the facts) and the entry points configured or given by presets. Entries are written atomically (temporary file,
then rename), so parallel workers and interrupted runs never leave a torn file. JSON only:
a cache is never a way to run code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from graphlint import __version__
from graphlint.checks.facts import ExtractOptions, FileFacts

CACHE_DIR_NAME = ".graphlint_cache"
CACHE_DIR_ENV = "GRAPHLINT_CACHE_DIR"


def content_key(source: bytes) -> str:
    return hashlib.sha256(source).hexdigest()


@cache
def _checker_sources_digest() -> str:
    digest = hashlib.sha256()
    package = Path(__file__).parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint(options: ExtractOptions) -> str:
    digest = hashlib.sha256()
    digest.update(__version__.encode())
    digest.update(_checker_sources_digest().encode())
    digest.update(json.dumps(dataclasses.astuple(options)).encode())
    return digest.hexdigest()[:16]


class FactsCache:
    def __init__(self, directory: Path, options: ExtractOptions) -> None:
        self.root = directory
        self.directory = directory / f"facts-{fingerprint(options)}"

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> FileFacts | None:
        try:
            return FileFacts.from_text(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # missing, unreadable or corrupted: parse again

    def put(self, key: str, text: str) -> None:
        """``text``: the facts as ``FileFacts.to_text`` writes them."""
        self._write_text(self._path(key), text)

    def get_table(self, name: str) -> Any:
        """A table of this fingerprint that is not one file's facts (``catalog.py``'s rule
        table), as JSON data; None when missing or unreadable. The caller validates its shape."""
        try:
            return json.loads((self.directory / f"{name}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put_table(self, name: str, data: Any) -> None:
        self._write(self.directory / f"{name}.json", data)

    def _write(self, path: Path, data: Any) -> None:
        # dumps, not dump: json.dump encodes in pure Python, dumps in C
        self._write_text(path, json.dumps(data, separators=(",", ":")))

    def _write_text(self, path: Path, text: str) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._mark_cache_dir()
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temp, path)
        except OSError:
            pass  # a read-only or full disk costs speed, never results

    def _mark_cache_dir(self) -> None:
        """Like ruff's cache: never committed, skipped by backup tools."""
        gitignore = self.root / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("# Automatically created by graphlint.\n*\n", encoding="utf-8")
            (self.root / "CACHEDIR.TAG").write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n# graphlint facts cache\n", encoding="utf-8"
            )
