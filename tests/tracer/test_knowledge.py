"""The knowledge base: a data file of signatures from the seeds, matched against findings."""

from __future__ import annotations

import re

import pytest

from graphlint.tracer.findings import Finding
from graphlint.tracer.knowledge import SIGNATURES_FILE, annotate, load_signatures, match_hint

SEED_REF = re.compile(r"^[\w.-]+#\d+$")  # a seed issue: torchair#236, MindSpeed-LLM#1187


def test_at_least_twelve_signatures_each_with_both_languages_and_refs() -> None:
    signatures = load_signatures()
    assert len(signatures) >= 12
    assert len({s.id for s in signatures}) == len(signatures)
    for signature in signatures:
        assert signature.hint["en"] and signature.hint["zh"], signature.id
        assert re.search(r"[\u4e00-\u9fff]", signature.hint["zh"]), signature.id
        assert signature.refs and all(SEED_REF.match(r) for r in signature.refs), signature.id


def test_signatures_are_data_a_user_can_read() -> None:
    assert SIGNATURES_FILE.suffix == ".toml"
    assert "[[signature]]" in SIGNATURES_FILE.read_text(encoding="utf-8")


def finding(**fields) -> Finding:
    base = {"layer": "dynamo", "stage": "dynamo", "kind": "graph-break", "message": ""}
    return Finding(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "signature_id", "ref"),
    [
        ({"code": "GB0059", "details": {"meaning": "str-on-symint"}}, "str-on-symint", "torchair#602"),
        # torch 2.14 files str() of a SymInt under another code: the hint follows the meaning
        ({"code": "GB6053", "details": {"meaning": "str-on-symint"}}, "str-on-symint", "torchair#602"),
        ({"kind": "recompile-limit", "code": "GB0039"}, "recompile-limit-dynamic-helper", "pytorch#1497"),
        ({"kind": "compile-error", "message": "AssertionError: Guard check failed: 0/0"}, "from-numpy-guard-failure", "torchair#451"),
        ({"layer": "capture", "stage": "capture", "kind": "capture-error", "message": "RuntimeError: Cannot prepare for replay"}, "cannot-prepare-for-replay", "torchair#310"),
        ({"layer": "capture", "stage": "capture", "kind": "capture-error", "message": "Not allow to sync captured-stream"}, "sync-captured-stream", "torchair#236"),
        ({"layer": "capture", "stage": "capture", "kind": "capture-error", "message": "graph replay on a different stream is not supported"}, "replay-on-other-stream", "pytorch#1497"),
        ({"layer": "torchair", "stage": "torchair", "kind": "converter-missing", "message": "No converter registered for aten.index_put.default"}, "converter-missing", "torchair#231"),
        ({"layer": "torchair", "stage": "torchair", "kind": "compile-error", "message": "FX output shape mismatch with GE output"}, "fx-ge-shape-mismatch", "torchair#143"),
        ({"layer": "torchair", "stage": "torchair", "kind": "compile-error", "message": "broadcast() got an unexpected keyword argument 'group_src'"}, "broadcast-group-src", "torchair#402"),
        ({"layer": "model", "stage": "eager", "kind": "slow-first-run", "message": "first call took 137 s"}, "first-run-slow-jit", "pytorch#1428"),
        ({"code": "GB0147", "file": "/venv/lib/python3.11/site-packages/transformers/models/x.py"}, "transformers-constructs", "torchair#212"),
        ({"layer": "capture", "stage": "capture", "kind": "host-device-copy", "code": "GL201"}, "capture-unsafe-construct", "torchair#236"),
        ({"code": "GB0170"}, "data-dependent-branch", "torchair#212"),
    ],
)
def test_known_signature_gives_its_hint_and_refs(fields: dict, signature_id: str, ref: str) -> None:
    signature = match_hint(finding(**fields))
    assert signature is not None and signature.id == signature_id
    annotated = annotate(finding(**fields), "en")
    assert ref in annotated.refs and annotated.hint == signature.hint["en"]
    assert annotate(finding(**fields), "zh").hint == signature.hint["zh"]


def test_an_unknown_failure_gets_no_hint() -> None:
    plain = finding(kind="model-error", layer="model", stage="eager", code="GT001", message="ValueError: bad input")
    assert match_hint(plain) is None
    assert annotate(plain).hint is None and annotate(plain).refs == []


def test_a_shape_error_outside_torchair_is_not_the_fx_ge_mismatch() -> None:
    error = finding(kind="compile-error", message="RuntimeError: shape mismatch: (8) vs (6)")
    signature = match_hint(error)
    assert signature is None or signature.id != "fx-ge-shape-mismatch"


def test_lang_zh_prints_the_chinese_hint(trace_json) -> None:
    status, report = trace_json("samples/trace/data_dependent_branch.py", "--stages", "eager,dynamo", "--lang", "zh")
    breaks = [f for f in report["findings"] if f["code"] == "GB0170"]
    assert status == 1 and breaks
    assert "torch.cond" in breaks[0]["hint"] and "断图" in breaks[0]["hint"]
