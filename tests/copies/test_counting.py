"""aten-level counting on real compiled graphs: the samples' exact counts and lines, the drop
between each sample and its rewrite, the backward graph under training, and how each copy is
grouped. Graphs come from ``GraphRecorder.aot_eager`` in this process (one compile per sample,
shared by the module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from graphlint.tracer.copies.aten import aten_op_name, copy_group, count_aten_copies
from graphlint.tracer.copies.report import build_copies_report
from graphlint.tracer.locate import display_path
from graphlint.tracer.recording import GraphRecorder, run_compiled
from graphlint.tracer.target import load_target
from tests.copies.markers import SAMPLES, lines_of, marked_copies
from tests.expectations import read_expectations

SAMPLE_FILES = sorted(SAMPLES.glob("*.py"))
REWRITTEN = sorted(SAMPLES.glob("*_rewritten.py"))


def aten_counts(target_path: Path, train: bool = False) -> dict[str, Any]:
    target = load_target(str(target_path))
    recorder = GraphRecorder()
    run_compiled(target.fn, target.inputs, target.kwargs, recorder.aot_eager, train=train)
    return count_aten_copies(recorder.graphs, target.user_files)


@pytest.fixture(scope="module")
def sample_counts() -> dict[str, dict[str, Any]]:
    return {path.name: aten_counts(path) for path in SAMPLE_FILES}


def test_every_pattern_has_a_rewrite() -> None:
    patterns = {p.name for p in SAMPLE_FILES} - {p.name for p in REWRITTEN}
    assert patterns == {p.name.replace("_rewritten", "") for p in REWRITTEN}
    assert len(REWRITTEN) >= 3


@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=lambda p: p.stem)
def test_sample_counts_are_exactly_its_header(sample: Path, sample_counts: dict[str, dict[str, Any]]) -> None:
    expected = read_expectations(sample).copies
    assert expected is not None, f"{sample.name} has no `# expect-copies:` line"
    assert sample_counts[sample.name]["ops"] == {op: n for op, n in expected.items() if n}


@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=lambda p: p.stem)
def test_each_copy_is_at_the_line_marked_in_the_sample(
    sample: Path, sample_counts: dict[str, dict[str, Any]]
) -> None:
    marked = marked_copies(sample)
    found = [
        (line["line"], line["op"])
        for graph in sample_counts[sample.name]["graphs"]
        for line in graph["lines"]
        for _ in range(line["count"])
    ]
    assert sorted(found) == sorted(marked)
    files = {line["file"] for graph in sample_counts[sample.name]["graphs"] for line in graph["lines"]}
    assert files <= {display_path(str(sample))}


@pytest.mark.parametrize("rewritten", REWRITTEN, ids=lambda p: p.stem)
def test_rewrite_has_fewer_copies(rewritten: Path, sample_counts: dict[str, dict[str, Any]]) -> None:
    before = sample_counts[rewritten.name.replace("_rewritten", "")]["ops"]
    after = sample_counts[rewritten.name]["ops"]
    assert sum(after.values()) < sum(before.values())


def test_groups_explain_the_patterns(sample_counts: dict[str, dict[str, Any]]) -> None:
    assert sample_counts["inplace_heavy.py"]["groups"] == {"input-mutation": 2, "explicit": 1}
    assert sample_counts["attention_contiguous.py"]["groups"] == {"layout": 4}
    assert sample_counts["shared_buffer_views.py"]["groups"] == {"view-mutation": 2, "input-mutation": 1}
    assert sample_counts["shared_buffer_views_rewritten.py"]["groups"] == {"explicit": 2}


def test_share_is_copies_over_all_aten_ops(sample_counts: dict[str, dict[str, Any]]) -> None:
    sample = SAMPLES / "attention_contiguous.py"
    clone_lines = lines_of(sample, "clone")
    assert len(clone_lines) == 4
    counts = sample_counts[sample.name]
    graph = counts["graphs"][0]
    # 35 aten calls in the forward: views, addmm, bmm, softmax … and the 4 clones.
    assert graph["ops"] == counts["total_ops"] == 35
    report = build_copies_report(counts, None)
    head_bytes = 2 * 4 * 8 * 8 * 4  # (batch, heads, seq, head_dim) float32
    assert report["totals"]["aten"] == {"ops": 35, "copies": 4, "share": round(4 / 35, 4), "bytes": 4 * head_bytes}
    assert report["graphs"][0]["rows"] == [
        {
            "op": "clone", "group": "layout", "why": report["groups"][0]["why"], "count": 4,
            "bytes": 4 * head_bytes, "share": round(4 / 35, 4),
            "top_lines": [{"file": display_path(str(sample)), "line": line, "count": 1} for line in clone_lines[:3]],
            "other_lines": 1,
        }
    ]


class CastAndContiguous(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.weight * x).t().contiguous().double()


def test_train_counts_the_backward_graph_too() -> None:
    recorder = GraphRecorder()
    run_compiled(CastAndContiguous(), [(torch.randn(4, 8),)], [{}], recorder.aot_eager, train=True)
    counts = count_aten_copies(recorder.graphs, {__file__})
    by_graph = {g["kind"]: g["copies"] for g in counts["graphs"]}
    # forward: the transpose made contiguous and the cast to float64; backward: the gradient
    # cast back to float32 (the transpose's gradient is a view).
    assert by_graph == {"forward": {"clone": 1, "_to_copy": 1}, "backward": {"_to_copy": 1}}
    assert counts["ops"] == {"_to_copy": 2, "clone": 1}
    report = build_copies_report(counts, None)
    line = CastAndContiguous.forward.__code__.co_firstlineno + 1
    assert [(e["line"], e["op"], e["count"], e["graphs"]) for e in report["by_line"]] == [
        (line, "_to_copy", 2, ["graph_0_forward", "graph_0_backward"]),
        (line, "clone", 1, ["graph_0_forward"]),
    ]


def _graph_of(fn: Any, *args: Any) -> torch.fx.GraphModule:
    recorder = GraphRecorder()
    run_compiled(fn, [args], [{}], recorder.aot_eager)
    return recorder.of_kind("forward")[0].module


def _groups(module: torch.fx.GraphModule) -> list[tuple[str | None, str]]:
    return [(aten_op_name(n), group) for n in module.graph.nodes if (group := copy_group(n)) is not None]


def test_copy_into_an_input_is_a_copy_back_and_into_a_local_is_explicit() -> None:
    def update(state: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        local = torch.empty_like(x)
        local.copy_(x)
        state.copy_(x)
        return local

    assert sorted(_groups(_graph_of(update, torch.zeros(3), torch.ones(3)))) == [
        ("copy", "explicit"), ("copy", "explicit"), ("copy_", "input-mutation"),
    ]


def test_indexed_write_cast_and_user_clone() -> None:
    def body(x: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x.clone()
        y[index] = x[index] * 2
        return y, x.half()

    assert sorted(_groups(_graph_of(body, torch.randn(5), torch.tensor([0, 2])))) == [
        ("_to_copy", "dtype-device"), ("clone", "explicit"), ("index_put", "indexed-write"),
    ]


def test_mixed_dtype_cat_is_noted_with_its_line() -> None:
    def body(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x.half(), x.bfloat16()])

    recorder = GraphRecorder()
    run_compiled(body, [(torch.randn(4),)], [{}], recorder.aot_eager)
    counts = count_aten_copies(recorder.graphs, {__file__})
    line = body.__code__.co_firstlineno + 1
    assert [(c["line"], sorted(c["dtypes"])) for c in counts["mixed_dtype_cats"]] == [
        (line, ["bfloat16", "float16"])
    ]
    kinds = {s["kind"]: s["refs"] for s in build_copies_report(counts, None)["suggestions"]}
    assert kinds == {"copies-mixed-dtype-cat": ["torchair#514"]}


def test_suggestions_name_the_seed_and_the_lines(sample_counts: dict[str, dict[str, Any]]) -> None:
    sample = SAMPLES / "shared_buffer_views.py"
    report = build_copies_report(sample_counts[sample.name], None)
    found = {(s["kind"], s["line"], tuple(s["refs"])) for s in report["suggestions"]}
    assert found == {
        *(("copies-view-mutation", line, ("torchair#241",)) for line in lines_of(sample, "slice_scatter")),
        *(("copies-input-mutation", line, ("torchair#231",)) for line in lines_of(sample, "copy_")),
    }
    assert all(s["hint"] for s in report["suggestions"])
    assert build_copies_report(sample_counts["shared_buffer_views_rewritten.py"], None)["suggestions"] == []


def test_suggestions_speak_chinese_when_asked(sample_counts: dict[str, dict[str, Any]]) -> None:
    report = build_copies_report(sample_counts["inplace_heavy.py"], None, lang="zh")
    assert {s["kind"] for s in report["suggestions"]} == {"copies-input-mutation"}
    assert all("拷回" in s["hint"] for s in report["suggestions"])


def test_bytes_show_the_clone_of_a_slice_is_cheaper_than_scatters_of_the_buffer(
    sample_counts: dict[str, dict[str, Any]],
) -> None:
    buffer_bytes = 32 * 16 * 4  # the (2 * DIM, DIM) float32 buffer
    views = build_copies_report(sample_counts["shared_buffer_views.py"], None)
    cloned = build_copies_report(sample_counts["shared_buffer_views_rewritten.py"], None)
    # two scatters rebuild the whole buffer, and it is copied back once; a clone copies a half
    assert views["totals"]["aten"]["bytes"] == 3 * buffer_bytes
    assert cloned["totals"]["aten"]["bytes"] == 2 * buffer_bytes // 2
    marked = marked_copies(SAMPLES / "shared_buffer_views.py")
    assert {(e["line"], e["op"]): e["bytes"] for e in views["by_line"]} == dict.fromkeys(marked, buffer_bytes)


def test_bytes_are_unknown_under_dynamic_shapes() -> None:
    def body(x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()

    recorder = GraphRecorder()
    run_compiled(body, [(torch.randn(4, 6),)], [{}], recorder.aot_eager, dynamic=True)
    report = build_copies_report(count_aten_copies(recorder.graphs, {__file__}), None)
    assert report["aten"] == {"clone": 1}
    assert report["totals"]["aten"]["bytes"] is None
    assert [(e["op"], e["bytes"]) for e in report["by_line"]] == [("clone", None)]
