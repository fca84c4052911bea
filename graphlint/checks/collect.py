"""Files → their facts: from the cache when the content is known, else parsed, in parallel.

A fork pool, one task per file, largest files first (so the longest parse does not start
last); small inputs are parsed in this process, where a pool costs more than it saves
(perf-notes.md). Workers write their own cache entries. A worker that dies costs only the file
that killed it, never the run (nor a hang, as with ``multiprocessing.Pool``).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from graphlint.checks.cache import FactsCache, content_key
from graphlint.checks.discover import read_source
from graphlint.checks.facts import ExtractOptions, FileFacts

if TYPE_CHECKING:
    import multiprocessing.context

SERIAL_BELOW = 24  # files to parse; fewer than this are not worth a pool

# Set before the pool forks; workers inherit them.
_worker_options = ExtractOptions()
_worker_cache: FactsCache | None = None


def collect_facts(
    files: list[Path], options: ExtractOptions, cache: FactsCache | None, jobs: int
) -> dict[Path, FileFacts]:
    facts: dict[Path, FileFacts] = {}
    missing: list[Path] = []
    with _collector_paused():
        for path in files:
            cached = _from_cache(path, cache)
            if cached is None:
                missing.append(path)
            else:
                facts[path] = cached
    if not missing:
        return facts  # served from the cache: neither the walk (libcst) nor a pool is imported
    missing.sort(key=_size, reverse=True)
    import multiprocessing

    from graphlint.checks.walk_dispatch import prepare_walk

    prepare_walk()  # once, before a pool forks: workers inherit it

    if jobs <= 1 or len(missing) < SERIAL_BELOW or "fork" not in multiprocessing.get_all_start_methods():
        with _frozen_heap():
            for path in missing:
                facts[path] = _parse(path, options, cache)
        return facts
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    global _worker_options, _worker_cache
    _worker_options, _worker_cache = options, cache
    fork = multiprocessing.get_context("fork")
    # The workers collect their garbage; this process only decodes their answers.
    with _frozen_heap(), _collector_paused(), ProcessPoolExecutor(min(jobs, len(missing)), mp_context=fork, initializer=gc.enable) as pool:
        futures = [(path, pool.submit(_parse_in_worker, path)) for path in missing]
        for path, future in futures:
            try:
                facts[path] = FileFacts.from_text(future.result())
            except BrokenProcessPool:
                break
    # A worker killed by a signal (libcst's native parser, the OOM killer) breaks the pool and
    # loses every file in flight. Those are parsed again one process each, so that only the
    # file that kills its process is lost, as an internal error.
    for path in missing:
        if path not in facts:
            facts[path] = _parse_alone(path, fork)
    return facts


@contextmanager
def _frozen_heap() -> Iterator[None]:
    """What is alive when parsing starts (the modules of graphlint and libcst, the cached facts)
    is left out of the cyclic garbage collector's passes (``gc.freeze``). A libcst parse makes
    some 15 objects a line, so full collections come often, and each would scan that whole heap
    again: about a tenth of the parse time on transformers' models/b*. Forked workers inherit
    the frozen heap (which also spares copying its pages: Python's ``gc`` documentation advises
    freezing before a fork). Unfrozen after, for a long-lived caller (``graphlint server``)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while facts are decoded from JSON (the cache's, or a
    worker's answer) or one file is parsed and walked. Decoding makes no reference cycles, only
    a great many containers, and the collector, triggered every 700 of them, would scan the
    facts decoded so far again and again (most of the time this process spent on a pool's
    answers). A file's two trees are such containers too (libcst's some 15 objects a line, the
    ``ast``'s): a walk left to the collector paid a tenth of its time for young collections
    that each scanned the trees built so far, and found almost nothing (a few hundred objects
    of cyclic garbage a file, closures; no cycle holds a tree, ``test_cold_walks.py``). That
    garbage waits for the first collection after the file."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _from_cache(path: Path, cache: FactsCache | None) -> FileFacts | None:
    if cache is None:
        return None
    try:
        return cache.get(content_key(read_source(path)))
    except OSError:
        return None


def _extract(path: Path, options: ExtractOptions) -> tuple[FileFacts, str | None]:
    """The file's facts and its content key (None: an error that is not cached)."""
    try:
        source = read_source(path)
    except OSError as exc:
        return FileFacts(error=f"cannot read: {exc.strerror or exc}"), None
    try:
        with _collector_paused():
            facts = extract_facts(source, options)
        return facts, content_key(source)
    except Exception as exc:  # a checker bug must not lose the other files' results
        return FileFacts(error=f"internal error: {type(exc).__name__}: {exc}", internal=True), None


def _parse(path: Path, options: ExtractOptions, cache: FactsCache | None) -> FileFacts:
    facts, key = _extract(path, options)
    if cache is not None and key is not None:
        cache.put(key, facts.to_text())
    return facts


def extract_facts(source: bytes, options: ExtractOptions) -> FileFacts:
    """The walk (``extract.py``), imported only when a file has to be parsed: it imports libcst
    (0.17 s), which a run served from the cache never needs."""
    from graphlint.checks.extract import extract_facts as walk

    return walk(source, options)


def _parse_alone(path: Path, fork: multiprocessing.context.BaseContext) -> FileFacts:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(1, mp_context=fork) as pool:
        try:
            return FileFacts.from_text(pool.submit(_parse_in_worker, path).result())
        except BrokenProcessPool:
            return FileFacts(error="internal error: the process parsing this file was killed", internal=True)


def _parse_in_worker(path: Path) -> str:
    """The facts as JSON text, serialized once: the cache entry and what the parent reads."""
    facts, key = _extract(path, _worker_options)
    text = facts.to_text()
    if _worker_cache is not None and key is not None:
        _worker_cache.put(key, text)
    return text


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
