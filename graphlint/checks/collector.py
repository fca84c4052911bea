"""The cyclic garbage collector paused while code that makes many containers and no cycles runs.

Pausing is counted across threads: the collector runs again when the last pause ends, and only
if it ran when the first began. ``graphlint server`` solves the value flow on another thread
(``graph_cache.SolvedGraphs.solve_ahead``) while its own thread checks: with a plain
``gc.disable()`` / ``gc.enable()`` pair in each, whichever ended first turned the collector on
under the other (a solve left to the collector's passes over its millions of objects took a third
longer).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
_enabled_before = False  # whether the collector ran when the first of the pauses under way began


@contextmanager
def collector_paused() -> Iterator[None]:
    global _pauses, _enabled_before
    with _lock:
        if _pauses == 0:
            _enabled_before = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _enabled_before:
                gc.enable()
