"""How long a repro may spend shrinking (``--shrink-seconds``).

Shrinking reruns the failing check once per candidate (a compile each): on a large graph or a long
forward that is minutes. Past the budget every further candidate counts as "does not fail" without
running, so each shrinker stops at once with the smallest repro found so far, and the repro says
that a smaller one may exist.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# What `graphlint repro` allows by default: enough for the samples' graphs and sources many times
# over, short enough that a large model's repro is written in minutes, not hours.
DEFAULT_SHRINK_SECONDS = 300.0


class ShrinkBudget:
    def __init__(self, seconds: float = DEFAULT_SHRINK_SECONDS) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.ran_out = False

    def left(self) -> bool:
        if time.monotonic() - self.started >= self.seconds:
            self.ran_out = True
        return not self.ran_out

    def bound(self, still_fails: Callable[..., bool]) -> Callable[..., bool]:
        """``still_fails`` while time is left; after that, False without running it."""

        def bounded(*args: Any) -> bool:
            return self.left() and still_fails(*args)

        return bounded

    def note(self) -> str:
        if not self.ran_out:
            return ""
        return f"Shrinking stopped at its budget ({self.seconds:g} s, --shrink-seconds): a smaller repro may exist."
