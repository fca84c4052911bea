"""Capture metadata a framework stores on the device (``capture-device-attributes``): never None
in a capture, and moving it to the device copies nothing. A small project in the shape of
sglang's DSA indexer on the NPU (``layers/attention/dsa/dsa_indexer.py``, written here): the
attention backend's capture metadata init fills ``actual_seq_lengths_q`` and ``seq_lens`` and
leaves the host ``seq_lens_cpu_int`` None (``capture-none-attributes``); and the sglang preset's
own entry, the capture batch's ``forward_batch.seq_lens``."""

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


# sglang's capture batch: every graph runner builds its ForwardBatch from its own buffers, seq_lens
# made on the device (seq_lens_cpu on the host), so the sglang preset names forward_batch.seq_lens
# among capture-device-attributes. A model in the shape of sglang's DSA indexer, whose extend
# path (a DLLM_EXTEND capture) reads the lengths off the batch; the sites say what a capture does.
BATCH_MODEL = """
    import torch
    from torch import nn


    class Indexer(nn.Module):
        def __init__(self):
            super().__init__()
            self.wk = nn.Linear(8, 8)

        def forward(self, x, forward_batch):
            k = self.wk(x)
            is_prefill = (
                forward_batch.forward_mode.is_extend()
                and not forward_batch.forward_mode.is_target_verify()
            )
            lens_kv = forward_batch.seq_lens
            if is_prefill:
                if forward_batch.attn_cp_metadata is not None:  # never in a capture
                    forward_batch.lens_kv = forward_batch.attn_cp_metadata.lens_kv  # rebinds no name
                    lens_kv = forward_batch.lens_kv
                else:
                    lens_kv = forward_batch.seq_lens
                mixed = forward_batch.seq_lens
            else:
                mixed = forward_batch.seq_lens_cpu
            moved = lens_kv.to(k.device)  # known
            sliced = forward_batch.seq_lens[:4].int().to(k.device)  # known
            host = forward_batch.seq_lens_cpu.to(k.device)  # copies: made on the host
            back = forward_batch.seq_lens.to("cpu")  # copies: to the host
            either = mixed.to(k.device)  # copies: seq_lens_cpu outside DLLM_EXTEND
            return k + moved + sliced + host + back.sum() + either


    class IndexerForCausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.indexer = Indexer()

        def forward(self, input_ids, positions, forward_batch):
            return self.indexer(input_ids, forward_batch)


    EntryClass = IndexerForCausalLM
"""

SGLANG_PACKAGES = ("sglang", "sglang/srt", "sglang/srt/models")


def _batch_sites(tmp_path: Path, pyproject: str) -> set[int]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    files = {f"{package}/__init__.py": "" for package in SGLANG_PACKAGES}
    files["sglang/srt/models/indexer.py"] = textwrap.dedent(BATCH_MODEL)
    _, report = lint_project(tmp_path, files, pyproject=pyproject)
    assert all(f["severity"] == "error" for f in report["findings"] if f["code"] == "GL201")
    return {f["line"] for f in report["findings"] if f["code"] == "GL201" and f["path"].endswith("indexer.py")}


def _batch_lines(tag: str) -> set[int]:
    return {n for n, line in enumerate(textwrap.dedent(BATCH_MODEL).splitlines(), 1) if f"# {tag}" in line}


def test_the_capture_batchs_seq_lens_is_on_the_device_on_every_platform(tmp_path: Path) -> None:
    """The sglang preset's capture-device-attributes: moving ``forward_batch.seq_lens`` (a slice,
    ``.int()`` of it, a name every binding of which a capture runs holds it) to the device copies
    nothing in a capture, on the NPU and on CUDA; ``seq_lens_cpu``, a move to the host and a name
    bound to ``seq_lens_cpu`` in some mode are still copies."""
    copies = _batch_lines("copies")
    assert len(copies) == 3
    for platform in ("npu", "cuda"):
        pyproject = f'[tool.graphlint]\npresets = ["sglang"]\nplatform = "{platform}"\n'
        assert _batch_sites(tmp_path / platform, pyproject) == copies


def test_without_the_sglang_preset_the_batchs_lengths_are_copies(tmp_path: Path) -> None:
    pyproject = '[tool.graphlint]\npresets = []\ncapture-roots = ["sglang.srt.models.indexer.IndexerForCausalLM.forward"]\n'
    assert _batch_sites(tmp_path, pyproject) == _batch_lines("copies") | _batch_lines("known")
