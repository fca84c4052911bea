"""Generated code: random valid Python (hypothesmith) and mutated samples (lines deleted or
duplicated) never make the checker raise; ``--fix`` output always parses, fixing twice equals
fixing once, and a file without fixable findings is left byte for byte as it was.

In-process through the engine and the fixer (what ``graphlint check --fix`` runs), so that
hypothesis can try many inputs quickly; the CLI itself is exercised by the other test files.
"""

from __future__ import annotations

import ast
import tempfile
import warnings
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graphlint.checks.engine import CheckOptions, CheckResult, run_check
from graphlint.checks.extract import LIBCST_CANNOT_PARSE, extract_facts
from graphlint.checks.fix import plan_fixes, write_fixes
from graphlint.checks.rules import all_rules
from graphlint.checks.rules.base import snippet

# hypothesmith parses what it generates with warnings on ("invalid imaginary literal", …).
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

REPO = Path(__file__).resolve().parents[2]
SAMPLE_SOURCES = [p.read_text(encoding="utf-8") for p in sorted((REPO / "samples" / "static").rglob("*.py"))]
SNIPPET_SOURCES = [snippet(code) for rule in all_rules() for code in (*rule.INVALID, *rule.VALID)]

# hypothesmith's generators are slow and draw a lot of data by design (whole modules from the
# grammar); hypothesis's health checks for that would fail the test at random, not the checker.
GENERATED = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A sample or a rule snippet with a few lines deleted or duplicated."""
    source = draw(st.sampled_from(SAMPLE_SOURCES + SNIPPET_SOURCES))
    lines = source.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        index = draw(st.integers(0, len(lines) - 1))
        if draw(st.booleans()):
            del lines[index]
        else:
            lines.insert(index, lines[index])
    return "".join(lines)


def assert_extracts(source: str) -> None:
    """Never an internal error; GL000 exactly when Python refuses the source, or, said as such,
    for the rare valid Python libcst cannot read (as in the corpus test)."""
    facts = extract_facts(source.encode("utf-8"))
    assert not facts.internal, facts.error
    if parses(source):
        assert facts.error is None or facts.error.startswith(LIBCST_CANNOT_PARSE), facts.error
    else:
        assert facts.error is not None


@GENERATED
@given(hypothesmith.from_grammar())
# Found here: CPython accepts a line continuation before the end of the file after a CRLF (not
# after a LF); libcst's tokenizer does not.
@example("pass;\n\\\r\n")
def test_random_grammar_python_never_raises(source):
    assert_extracts(source)


@GENERATED
@given(hypothesmith.from_node())
def test_random_syntax_tree_python_never_raises(source):
    assert_extracts(source)


@GENERATED
@given(mutated())
def test_mutated_samples_never_raise(source):
    assert_extracts(source)


def check_file(path: Path) -> CheckResult:
    result = run_check(CheckOptions(paths=[path], use_cache=False, jobs=1))
    assert result.internal_errors == 0
    return result


def fix_file(path: Path) -> CheckResult:
    """One ``--fix --unsafe-fixes`` pass; the findings before it."""
    result = check_file(path)
    write_fixes(plan_fixes(result.findings, unsafe=True))
    return result


def assert_fix_properties(source: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.py"
        original = source.encode("utf-8")
        path.write_bytes(original)
        before = fix_file(path)
        once = path.read_bytes()
        if not any(f.fixable for f in before.findings):
            assert once == original  # nothing to fix: not a byte changes
            return
        if parses(source):
            assert parses(once.decode("utf-8"))
        fix_file(path)
        assert path.read_bytes() == once  # fixing twice is fixing once


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_fix_on_mutated_samples_parses_and_is_idempotent(source):
    assert_fix_properties(source)


@GENERATED
@given(hypothesmith.from_node())
def test_fix_leaves_random_python_without_findings_untouched(source):
    assert_fix_properties(source)


def test_every_fixable_rule_snippet_is_fixed_once(tmp_path):
    """The unmutated snippets: at least one really changes, so the properties above are not vacuous."""
    changed = 0
    for index, source in enumerate(SNIPPET_SOURCES + SAMPLE_SOURCES):
        path = tmp_path / f"case_{index}.py"
        path.write_text(source, encoding="utf-8")
        fix_file(path)
        once = path.read_text(encoding="utf-8")
        changed += once != source
        assert parses(once)
        fix_file(path)
        assert path.read_text(encoding="utf-8") == once
    assert changed >= 2
