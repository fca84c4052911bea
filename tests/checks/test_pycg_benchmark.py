"""PyCG's micro-benchmark (Salis et al., ICSE 2021): graphlint's call graph against its ground truth.

The benchmark ships in PyCG's sdist, fetched the way a user would (``pip download``) into
graphlint's cache (``GRAPHLINT_HOME``, as the torch_npu wheel is) and read from the archive; it is
never committed. PyCG itself scores precision 0.979, recall 0.933, 106 of 119 snippets exact.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.pycg_micro import pycg_sdist, score, snippets
from tests.conftest import DEFAULT_HOME


@pytest.fixture(scope="module")
def sdist() -> Path:
    home = Path(os.environ.setdefault("GRAPHLINT_HOME", str(DEFAULT_HOME)))
    return pycg_sdist(home / "pycg")


def test_graphlint_beats_pycg_on_its_own_micro_benchmark(sdist: Path) -> None:
    assert len(snippets(sdist)) >= 110  # the archive was read: every category's snippets
    result = score(sdist)
    assert result.precision >= 0.98, result.misses
    assert result.recall >= 0.95, result.misses
    assert result.exact >= 107, sorted(result.misses)  # PyCG: 106
