"""The CUDA mode's reading of what torch tells it, checked on the CPU with torch's own message
builders and real FX stack traces (the runs themselves are in test_cuda_capture.py)."""

from __future__ import annotations

import torch
from torch._inductor.cudagraph_utils import format_default_skip_message, log_cudagraph_skip_and_bump_counter

from graphlint.tracer.capture.cuda import CUDAGRAPH_LOGGER, collected_messages, skip_finding
from graphlint.tracer.capture.fake_device import run_on_audit_device
from graphlint.tracer.target import load_target
from tests.capture.conftest import CAPTURE_SAMPLES

HOST_CONSTANT = next(s for s in CAPTURE_SAMPLES if s.stem == "host_constant")


def host_constant_stack_trace() -> tuple[str, str]:
    """(node name, stack trace) of the host constant in the sample's real aten graph."""
    target = load_target(str(HOST_CONSTANT))
    (graph,) = run_on_audit_device(target).graphs
    node = next(n for n in graph.module.graph.nodes if n.op == "get_attr")
    return node.name, node.meta["stack_trace"]


def test_a_cpu_device_skip_is_a_host_tensor_at_the_users_line() -> None:
    name, stack_trace = host_constant_stack_trace()
    message = format_default_skip_message(f"cpu device ({name}). Found from : \n {stack_trace}")
    finding = skip_finding(message, {str(HOST_CONSTANT)})
    assert (finding.code, finding.severity, finding.file, finding.line) == ("GL203", "error", str(HOST_CONSTANT), 23)
    assert finding.message == f"CUDA graphs skipped: cpu device ({name})"


def test_an_incompatible_op_is_a_sync_and_a_mutation_is_a_warning() -> None:
    sync = skip_finding("disabling cudagraphs due to incompatible op aten._local_scalar_dense.default", set())
    assert (sync.code, sync.kind, sync.line) == ("GL202", "sync", None)
    mutation = skip_finding(format_default_skip_message("mutated inputs (1 instances)"), set())
    assert (mutation.code, mutation.kind, mutation.severity) == (None, "cudagraph-skip", "warning")


def test_skip_messages_logged_by_inductor_are_collected() -> None:
    message = format_default_skip_message("cpu device (arange)")
    with collected_messages(CUDAGRAPH_LOGGER) as messages:
        log_cudagraph_skip_and_bump_counter(message)
    log_cudagraph_skip_and_bump_counter("after the block")
    assert messages == [message]
    assert torch._dynamo.utils.counters["inductor"]["cudagraph_skips"] >= 2
