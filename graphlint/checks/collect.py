"""Files → their facts: from the cache when the content is known, else parsed, in parallel.

A fork pool, one task per file, largest files first (so the longest parse does not start
last); small inputs are parsed in this process, where a pool costs more than it saves
(perf-notes.md). Workers write their own cache entries.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import stat
from pathlib import Path
from typing import Any

from graphlint.checks.cache import FactsCache, content_key
from graphlint.checks.extract import ExtractOptions, extract_facts
from graphlint.checks.facts import FileFacts

SERIAL_BELOW = 24  # files to parse; fewer than this are not worth a pool

# Set before the pool forks; workers inherit them.
_worker_options = ExtractOptions()
_worker_cache: FactsCache | None = None


def collect_facts(
    files: list[Path], options: ExtractOptions, cache: FactsCache | None, jobs: int
) -> dict[Path, FileFacts]:
    facts: dict[Path, FileFacts] = {}
    missing: list[Path] = []
    for path in files:
        cached = _from_cache(path, cache)
        if cached is None:
            missing.append(path)
        else:
            facts[path] = cached
    missing.sort(key=_size, reverse=True)
    if jobs <= 1 or len(missing) < SERIAL_BELOW or "fork" not in multiprocessing.get_all_start_methods():
        for path in missing:
            facts[path] = _parse(path, options, cache)
        return facts
    global _worker_options, _worker_cache
    _worker_options, _worker_cache = options, cache
    with multiprocessing.get_context("fork").Pool(min(jobs, len(missing))) as pool:
        for path, data in zip(missing, pool.imap(_parse_in_worker, missing, chunksize=1)):
            facts[path] = FileFacts.from_json(data)
    return facts


def _from_cache(path: Path, cache: FactsCache | None) -> FileFacts | None:
    if cache is None:
        return None
    try:
        return cache.get(content_key(_read(path)))
    except OSError:
        return None


def _parse(path: Path, options: ExtractOptions, cache: FactsCache | None) -> FileFacts:
    try:
        source = _read(path)
    except OSError as exc:
        return FileFacts(error=f"cannot read: {exc.strerror or exc}")
    try:
        facts = extract_facts(source, options)
    except Exception as exc:  # a checker bug must not lose the other files' results
        return FileFacts(error=f"internal error: {type(exc).__name__}: {exc}", internal=True)
    if cache is not None:
        cache.put(content_key(source), facts)
    return facts


def _read(path: Path) -> bytes:
    """The file's bytes; a FIFO or a device named ``*.py`` would block the run or never end."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "not a regular file")
    return path.read_bytes()


def _parse_in_worker(path: Path) -> dict[str, Any]:
    return _parse(path, _worker_options, _worker_cache).to_json()


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
