"""`graphlint repro` on every failing golden trace sample and on a tiny MoE's torchair gap: the
repro runs in a fresh folder with only graphlint importable, exits 1 with the failure's
signature, is at most 200 lines, names its versions, and exits 0 once the one-line fix the
sample's doc names is applied (to the repro, or to a copy of the sample and the repro made again).

``targets/qwen3_moe.py``, the issue's tiny Qwen3-MoE from transformers, has a torchair gap
(``aten.histc``) inside transformers' own code, which no one-line fix of the target removes: its
repro is checked to reproduce it (the fix cycle of the torchair layer is converter_gap's).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest

from graphlint.tracer.classify.graph_break import break_meanings
from tests.expectations import read_expectations
from tests.repro.conftest import REPO, graphlint

SAMPLES = REPO / "samples" / "trace"
TARGETS = Path(__file__).resolve().parent / "targets"


@dataclass(frozen=True)
class Case:
    target: Path
    layer: str
    signature: str  # what the repro prints after "reproduced: "
    old: str  # the one-line fix the target's doc names: this text …
    new: str  # … becomes this
    fix_in: str  # "repro": the line is in the repro, edited there; "target": fixed and made again
    doc: str  # the words of the target's doc that name the fix

    @property
    def id(self) -> str:
        return f"{self.layer}-{self.target.stem}"


def same_break(signature: str) -> set[str]:
    """The signature under every code torch releases give its break's meaning: str() of a
    SymInt is GB0059 up to torch 2.13 and GB6053 in 2.14 (``graph_breaks.toml``)."""
    code = signature.rsplit(" at ", 1)[-1]
    codes = next((m.codes for m in break_meanings() if code in m.codes), (code,))
    return {signature.removesuffix(code) + other for other in codes}


CASES = [
    Case(SAMPLES / "model_error.py", "model", "model RuntimeError at forward",
         "torch.zeros(6)", "torch.zeros(8)", "repro", "Fix: torch.zeros(8)"),
    Case(SAMPLES / "data_dependent_branch.py", "dynamo", "dynamo Unsupported at GB0170",
         "        if too_large:\n            y = y.clamp(-10, 10)\n",
         "        y = torch.where(y.abs().amax() > 10, y.clamp(-10, 10), y)\n", "target",
         "y = torch.where(y.abs().amax() > 10, y.clamp(-10, 10), y)"),
    Case(SAMPLES / "recompile_storm.py", "dynamo", "dynamo FailOnRecompileLimitHit at GB0039",
         "import torch\n", "import torch\ntorch._dynamo.config.recompile_limit = 16\n", "repro",
         "Fix: torch._dynamo.config.recompile_limit = 16"),
    Case(SAMPLES / "str_on_symint.py", "dynamo", "dynamo Unsupported at GB0059",
         "import torch\n", "import torch\ntorch._dynamo.config.automatic_dynamic_shapes = False\n", "repro",
         "Fix: torch._dynamo.config.automatic_dynamic_shapes = False"),
    Case(SAMPLES / "converter_gap.py", "torchair", "torchair NotImplementedError at aten.index_put.default",
         "updated = torch.index_put(hidden, (slots,), values)",
         "updated = hidden.scatter(0, slots[:, None].expand(-1, 8), values)",
         "target", "updated = hidden.scatter(0, slots[:, None].expand(-1, 8), values)"),
    Case(SAMPLES / "undeclared_mutation.py", "accuracy", "accuracy mismatch",
         "mutates_args=()", 'mutates_args=("q",)', "repro", 'Fix: ``mutates_args=("q",)``'),
    Case(SAMPLES / "capture_unsafe_copy.py", "capture", "capture GL201 at aten._to_copy",
         "return h - means.to(h.device)", "return h - h.mean(dim=0)", "target", "h - h.mean(dim=0)"),
]


def test_every_failing_golden_sample_has_a_case() -> None:
    failing = {p for p in SAMPLES.glob("*.py") if read_expectations(p).trace_verdict not in (None, "none")}
    assert failing == {c.target for c in CASES if c.target.parent == SAMPLES}
    for case in CASES:  # each case is the sample's verdict, and its fix is in the sample's doc
        assert read_expectations(case.target).trace_verdict == case.layer
        text = case.target.read_text(encoding="utf-8")
        assert case.old in text and case.doc in text


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_repro_exits_1_with_the_signature_and_0_after_the_fix(case: Case, made_repro, run_repro, tmp_path: Path) -> None:
    # The verdict picks the layer once (capture: the last stage, so the whole ladder runs; naming
    # the layer saved nothing measurable there); the other cases name it, and only the stages it needs run.
    repro = made_repro(case.target) if case.layer == "capture" else made_repro(case.target, "--layer", case.layer)
    text = repro.read_text(encoding="utf-8")
    assert text.count("\n") <= 200
    assert f"torch {version('torch')}" in text and "graphlint " in text  # the versions it was made with
    assert case.target.stem not in text.split('"""', 2)[2]  # nothing of the project is imported
    assert "Shrinking stopped" not in text  # the default budget is ample for these
    ran = run_repro(repro)
    assert ran.returncode == 1, ran.stdout + ran.stderr[-3000:]
    assert any(f"reproduced: {same}" in ran.stdout for same in same_break(case.signature)), ran.stdout

    if case.fix_in == "repro":
        fixed_repro = tmp_path / "repro.py"
        assert case.old in text
        fixed_repro.write_text(text.replace(case.old, case.new, 1), encoding="utf-8")
    else:
        fixed = tmp_path / case.target.name
        fixed.write_text(case.target.read_text(encoding="utf-8").replace(case.old, case.new, 1), encoding="utf-8")
        fixed_repro = made_repro(fixed, "--layer", case.layer)
    ran = run_repro(fixed_repro)
    assert ran.returncode == 0, ran.stdout + ran.stderr[-3000:]
    assert "gone:" in ran.stdout or "clean:" in ran.stdout


def test_qwen3_moe_repro_reproduces_the_gap_inside_transformers(made_repro, run_repro) -> None:
    repro = made_repro(TARGETS / "qwen3_moe.py", "--layer", "torchair")
    text = repro.read_text(encoding="utf-8")
    assert text.count("\n") <= 200 and "transformers/integrations/moe.py" in text  # where the gap is
    ran = run_repro(repro)
    assert ran.returncode == 1, ran.stdout + ran.stderr[-3000:]
    assert "reproduced: torchair RuntimeError at aten.histc.default" in ran.stdout


@dataclass(frozen=True)
class FromDump:
    target: Path  # deleted once traced: a repro from the dump must not need it
    dump: Path
    repro: Path  # graphlint repro TARGET --from DUMP


@pytest.fixture(scope="module")
def converter_gap_dump(tmp_path_factory: pytest.TempPathFactory) -> FromDump:
    """One trace of converter_gap with --dump, and the repro made from it: shared by the tests
    of --from and of the doc's repro (a trace costs more than the repro made from it)."""
    folder = tmp_path_factory.mktemp("from-dump")
    target = folder / "converter_gap.py"
    shutil.copy(SAMPLES / "converter_gap.py", target)
    dump = folder / "dump"
    traced = graphlint("trace", str(target), "--stages", "eager,dynamo,aot,torchair", "--dump", str(dump))
    assert traced.returncode == 1, traced.stderr[-3000:]
    target.unlink()
    out = folder / "repro.py"
    made = graphlint("repro", str(target), "--from", str(dump), "-o", str(out))
    assert made.returncode == 0, made.stderr[-3000:]
    assert made.stdout.startswith(f"wrote {out} (")
    return FromDump(target, dump, out)


def test_from_a_dump_the_trace_is_not_run_again(converter_gap_dump: FromDump, tmp_path: Path, run_repro) -> None:
    """``--from DIR``: the repro is made from the dump alone; the target is gone by then."""
    target, dump, out = converter_gap_dump.target, converter_gap_dump.dump, converter_gap_dump.repro
    ran = run_repro(out)
    assert ran.returncode == 1 and "reproduced: torchair NotImplementedError at aten.index_put.default" in ran.stdout

    # No budget: the graph as the trace dumped it, saying it was not shrunk; it still reproduces.
    whole = tmp_path / "whole.py"
    made = graphlint("repro", str(target), "--from", str(dump), "-o", str(whole), "--shrink-seconds", "0")
    assert made.returncode == 0 and "Shrinking stopped at its budget (0 s" in made.stderr, made.stderr[-3000:]
    assert "Shrinking stopped at its budget" in whole.read_text(encoding="utf-8").split('"""', 2)[1]
    assert whole.read_text(encoding="utf-8").count("torch.ops.aten.") > out.read_text(encoding="utf-8").count("torch.ops.aten.")
    ran = run_repro(whole)
    assert ran.returncode == 1 and "reproduced: torchair NotImplementedError at aten.index_put.default" in ran.stdout

    # Without any torchair the repro cannot tell: 2 (another failure), never 1 (reproduced).
    ran = run_repro(out, GRAPHLINT_HOME=str(tmp_path / "empty-home"), GRAPHLINT_TORCHAIR="")
    assert ran.returncode == 2 and "no torchair" in ran.stderr, ran.stdout + ran.stderr[-3000:]

    # A repro that cannot run its check at all (here: its inputs cannot be built) says so and
    # exits 2: Python's own status for an uncaught exception, 1, is "reproduced".
    broken = tmp_path / "broken.py"
    broken.write_text(out.read_text(encoding="utf-8").replace(
        "def load_args(reader):\n", "def load_args(reader):\n    raise RuntimeError('no such input here')\n", 1), encoding="utf-8")
    ran = run_repro(broken)
    assert ran.returncode == 2 and "other failure: the repro cannot run here (RuntimeError: no such input here)" in ran.stdout


def test_the_docs_real_repro_is_what_graphlint_writes(converter_gap_dump: FromDump) -> None:
    """docs/repro.md's repro, made from converter_gap the way the doc says: the same file, line
    for line, but the line naming where and with what versions it was made."""
    doc = (REPO / "docs" / "repro.md").read_text(encoding="utf-8").split("## A real repro", 1)[1]
    shown = doc.split("```python\n", 1)[1].split("```", 1)[0]
    written = converter_gap_dump.repro.read_text(encoding="utf-8")

    def without_origin(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("Made from ")]

    assert without_origin(shown) == without_origin(written)
    assert f"wrote repro.py ({written.count(chr(10))} lines)" in doc  # the count the doc quotes
    origin = next(line for line in shown.splitlines() if line.startswith("Made from "))
    assert origin.startswith("Made from samples/trace/converter_gap.py (TA001 at samples/trace/converter_gap.py:22) with graphlint ")


def test_a_dump_folder_that_is_not_one_is_a_usage_error(tmp_path: Path) -> None:
    made = graphlint("repro", "model.py", "--from", str(tmp_path))
    assert made.returncode == 2 and "not the --dump folder of a trace" in made.stderr


def test_an_unknown_layer_is_a_usage_error() -> None:
    made = graphlint("repro", "model.py", "--layer", "inductor")
    assert made.returncode == 2 and "invalid choice" in made.stderr


@pytest.mark.parametrize("seconds", ["-1", "soon", "nan"])
def test_a_shrink_budget_that_is_not_seconds_is_a_usage_error(seconds: str) -> None:
    made = graphlint("repro", "model.py", "--shrink-seconds", seconds)
    assert made.returncode == 2 and "not a number of seconds" in made.stderr


@pytest.mark.parametrize(
    ("entry", "signature", "helper"),
    [
        ("by_module", "dynamo Unsupported at GB0170", "def clamp_if_large("),  # import layers.checks as checks
        ("by_name", "dynamo Unsupported at GB0059", "def batch_tag("),  # from .shapes import batch_tag
    ],
)
def test_a_break_in_another_file_of_the_project_is_cut_into_the_repro(entry, signature, helper, tmp_path: Path, run_repro) -> None:
    """The breaking function is in another file of the project, imported as a module or by name
    (relative): the repro holds its source (and what it uses there) and imports nothing of the
    project. Shrinking is off: what is tested is the cut, which must reproduce as it is."""
    project = tmp_path / "project"
    shutil.copytree(TARGETS / "helpers_project", project)
    out = tmp_path / "repro.py"
    made = graphlint("repro", f"layers.model:{entry}", "-o", str(out), "--layer", "dynamo", "--shrink-seconds", "0", cwd=project)
    assert made.returncode == 0, made.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    assert helper in text and "import layers" not in text and "from .shapes" not in text
    ran = run_repro(out)
    assert ran.returncode == 1, ran.stdout + ran.stderr[-3000:]
    assert any(f"reproduced: {same}" in ran.stdout for same in same_break(signature)), ran.stdout
