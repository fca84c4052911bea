"""The ordered collectives of real recorded graphs (a one-rank gloo process group in this
process), with their string arguments and the user's line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from graphlint.tracer.distributed.collectives import collectives_in_graphs
from graphlint.tracer.recording import GraphRecorder, run_compiled

HERE = str(Path(__file__).resolve())


@pytest.fixture(scope="module")
def process_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    store = tmp_path_factory.mktemp("store") / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def step(x: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    gathered = x.new_empty((dist.get_world_size() * x.shape[0],))
    dist.all_gather_into_tensor(gathered, x)
    torch._dynamo.graph_break()
    dist.all_reduce(gathered)
    return gathered + 1


def lines_of(*needles: str) -> list[int]:
    source = Path(HERE).read_text().splitlines()
    return [next(i for i, text in enumerate(source, 1) if needle in text) for needle in needles]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_collectives_are_listed_in_graph_and_node_order(process_group: None, backend: str) -> None:
    recorder = GraphRecorder()
    run_compiled(step, [(torch.ones(4),)], [{}], getattr(recorder, backend))
    graphs = recorder.of_kind("dynamo") if backend == "eager" else [g for g in recorder.graphs if g.kind != "dynamo"]

    found = collectives_in_graphs(graphs, {HERE})

    suffix = "" if backend == "eager" else "_forward"
    assert [(c["graph"], c["op"]) for c in found] == [
        (f"graph_0{suffix}", "all_reduce"),
        (f"graph_0{suffix}", "all_gather_into_tensor"),
        (f"graph_1{suffix}", "all_reduce"),
    ]
    assert (found[0]["args"][0], found[2]["args"][0]) == ("max", "sum")  # ranks disagreeing on the op mismatch too
    expected_lines = lines_of("dist.all_reduce(x", "dist.all_gather_into_tensor(", "dist.all_reduce(gathered")
    assert [c["line"] for c in found] == expected_lines
    assert all(Path(c["file"]).resolve() == Path(HERE) for c in found)


def test_graphs_without_collectives_give_an_empty_list(process_group: None) -> None:
    recorder = GraphRecorder()
    run_compiled(lambda x: x * 2, [(torch.ones(4),)], [{}], recorder.eager)
    assert collectives_in_graphs(recorder.graphs, {HERE}) == []
