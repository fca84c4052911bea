"""Capture metadata a framework stores on the device (``capture-device-attributes``): never None
in a capture, and moving it to the device copies nothing. A small project in the shape of
sglang's DSA indexer on the NPU (``layers/attention/dsa/dsa_indexer.py``, written here): the
attention backend's capture metadata init fills ``actual_seq_lengths_q`` and ``seq_lens`` and
leaves the host ``seq_lens_cpu_int`` None (``capture-none-attributes``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

CONTEXT = """
    class ForwardContext:
        attn_backend = None


    _context = ForwardContext()


    def get_attn_backend():
        return _context.attn_backend
"""

# Each site is a GL201 copy; its comment says whether the knowledge leaves it in a capture.
INDEXER = """
    import torch
    from torch import nn

    from pkg.context import get_attn_backend


    class Indexer(nn.Module):
        def __init__(self):
            super().__init__()
            self.wk = nn.Linear(8, 8)

        def forward(self, x, bs, lengths):
            k = self.wk(x)
            if get_attn_backend().forward_metadata.seq_lens_cpu_int is None:
                lens_kv = get_attn_backend().forward_metadata.seq_lens
            else:
                lens_kv = get_attn_backend().forward_metadata.seq_lens_cpu_int
            if get_attn_backend().forward_metadata.actual_seq_lengths_q is None:
                lens_q = torch.tensor([1 + i for i in range(bs)], device=k.device)  # known
            else:
                lens_q = get_attn_backend().forward_metadata.actual_seq_lengths_q
            moved = lens_kv.to(k.device).int()  # known
            kept = get_attn_backend().forward_metadata.actual_seq_lengths_q[:bs].to(k.device)  # known
            host = lens_q.to("cpu")  # copies: to the host
            other = lengths.to(k.device)  # copies: not capture metadata
            extra = get_attn_backend().forward_metadata.extra
            if extra is None:
                extra = torch.tensor([bs], device=k.device)  # copies: nothing known of extra
            return k + moved + kept + host.sum() + other + extra


    def run(graph, x, bs, lengths):
        model = Indexer()
        with torch.npu.graph(graph):
            model(x, bs, lengths)
"""

KNOWLEDGE = """
    [tool.graphlint]
    presets = []
    capture-device-attributes = [
        "pkg.context.get_attn_backend().forward_metadata.actual_seq_lengths_q",
        "pkg.context.get_attn_backend().forward_metadata.seq_lens",
    ]
    capture-none-attributes = ["pkg.context.get_attn_backend().forward_metadata.seq_lens_cpu_int"]
"""


def _sites(tmp_path: Path, pyproject: str) -> dict[int, str]:
    files = {"pkg/__init__.py": "", "pkg/context.py": textwrap.dedent(CONTEXT), "pkg/indexer.py": textwrap.dedent(INDEXER)}
    _, report = lint_project(tmp_path, files, pyproject=textwrap.dedent(pyproject))
    return {f["line"]: f["severity"] for f in report["findings"] if f["code"] == "GL201"}


def _lines(tag: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(INDEXER).splitlines(), 1) if line.endswith(f"# {tag}")}


def test_capture_metadata_on_the_device_is_neither_none_nor_copied(tmp_path: Path) -> None:
    found = _sites(tmp_path, KNOWLEDGE)
    copies = {n for n, line in enumerate(textwrap.dedent(INDEXER).splitlines(), 1) if "# copies" in line}
    assert set(found) == copies and len(copies) == 3
    assert set(found.values()) == {"error"}


def test_without_the_knowledge_every_copy_is_found(tmp_path: Path) -> None:
    found = _sites(tmp_path, '[tool.graphlint]\npresets = []\n')
    copies = {n for n, line in enumerate(textwrap.dedent(INDEXER).splitlines(), 1) if "# copies" in line}
    assert set(found) == copies | _lines("known")
