"""The corpus harness's own pieces: it skips cleanly without the corpus, finds the statement of
a break line, names causes, and gathers the sources a model reaches (no torch, no corpus)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "break_corpus.py"
sys.path.insert(0, str(HARNESS.parent))

import break_corpus  # noqa: E402


def test_without_the_corpus_it_says_so_and_exits_0(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--corpus", str(tmp_path / "absent")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout.startswith("skipped: no corpus at")


def test_statement_lines_span_a_simple_statement_and_a_compound_header(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent("""\
        def f(x):
            y = g(
                x,
            )
            if (x >
                    0):
                return y
        """))
    spans = break_corpus.statement_lines(path)
    assert spans[3] == (2, 4)
    assert spans[6] == (5, 6)
    assert spans[7] == (7, 7)


@pytest.mark.parametrize(
    ("codes", "line", "cause"),
    [
        (["GB0124"], "        torch._check_tensor_all(cond)", ".item() in a check helper"),
        (["GB0124"], "    n = int(lengths.max())", "tensor value as a size / int"),
        (["GB0124"], "    flag = mask.any().item()", ".item()"),
        (["GB0291"], "    logger.warning(...)", "logging / warnings / print"),
        (["GB0264"], "    self.w = nn.Parameter(x)", "other (GB0264)"),
    ],
)
def test_cause_of(codes: list[str], line: str, cause: str) -> None:
    assert break_corpus.cause_of(codes, line)[0] == cause


def test_source_closure_follows_imports_but_not_into_other_models(tmp_path: Path) -> None:
    files = {
        "transformers/__init__.py": "from .models import *\n",
        "transformers/utils/__init__.py": "from .logging import get_logger\n",
        "transformers/utils/logging.py": "def get_logger(n): ...\n",
        "transformers/models/__init__.py": "",
        "transformers/models/auto/__init__.py": "",
        "transformers/models/a/__init__.py": "",
        "transformers/models/a/modeling_a.py": "from ...utils import logging\nfrom ..b.modeling_b import Block\nfrom ..auto import AutoModel\n",
        "transformers/models/b/__init__.py": "",
        "transformers/models/b/modeling_b.py": "from ..c.modeling_c import Other\n",
        "transformers/models/c/__init__.py": "",
        "transformers/models/c/modeling_c.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = {p.relative_to(tmp_path).as_posix() for p in break_corpus.source_closure("transformers.models.a.modeling_a", tmp_path)}
    assert found == {
        "transformers/models/a/modeling_a.py", "transformers/models/b/modeling_b.py",
        "transformers/utils/__init__.py", "transformers/utils/logging.py",
    }
