"""The worker's garbage collector: fewer and smaller collections, the same objects kept (issue 19).

A worker holds torch, the target's libraries (transformers) and the model: millions of objects
that live until it exits. CPython's full collections scan every one of them, and dynamo's and
AOTAutograd's compiles allocate enough to set one off again and again: on the tiny transformers
models the collector took 1.5–1.8 of a worker's 8–10 CPU-s, most of it in four full collections.
So:

- ``freeze_long_lived()`` moves what exists now to the permanent generation (``gc.freeze``),
  which later collections skip. Called once, when the target is loaded (before the stages' copies
  of it): what is alive then is the worker's for good anyway. Frozen later, a stage's copy of the
  model or its compiled graphs, garbage once the stage ends, could never be collected.
- ``collect_less_often()`` raises the youngest generation's threshold from 700 to 10,000 new
  objects: a compile makes hundreds of thousands, nearly all kept by the graph being built, and
  a young collection ran after every 700 (about 900 of them in one trace of tiny Llama). Cyclic garbage is still collected, a little later
  (10,000 objects is a few MB at most, beside a model's tensors).

Neither changes what any stage runs or sees: no object that is reachable is ever freed, and
reference counting frees everything that is not in a cycle at once, as before.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000  # CPython's default is 700


def collect_less_often() -> None:
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def freeze_long_lived() -> None:
    """What is alive now is skipped by every later collection (it lives as long as the worker)."""
    gc.freeze()
