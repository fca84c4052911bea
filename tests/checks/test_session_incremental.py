"""What a session keeps per file between checks (each file's imports' heads, its linked file,
its part of the solve key, by the file's facts; an open file's last text) gives what a fresh
session finds: after files are added, removed, renamed and edited, after an import changes how
modules are named, and after the configuration changes what an unchanged text holds."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from graphlint.checks.collect import collect_facts
from graphlint.checks.engine import extract_options_of
from graphlint.checks.facts import FileFacts
from graphlint.checks.graph_cache import SolvedGraphs
from graphlint.checks.modules import ImportedHeads, imported_heads
from graphlint.checks.session import CheckSession
from graphlint.checks.value_graph import LinkedModule
from graphlint.checks.valueflow import solve
from graphlint.config import Knowledge
from tests.checks.test_session import summary
from tests.checks_hardening.cli import write_tree

# ``sgl/`` is a namespace package (no ``__init__.py``): its files are named ``helpers`` and
# ``run`` until a file imports ``sgl`` (then ``sgl.helpers``, and ``from helpers import`` no
# longer finds the helper: the compiled ``count_valid`` and its GL202 are gone).
HELPERS = "import torch\n\n\ndef count_valid(mask):\n    return int(mask.sum().item())\n"
RUN = "import torch\nfrom helpers import count_valid\n\nfast = torch.compile(count_valid)\n"


def test_a_session_checked_after_edits_finds_what_a_fresh_session_finds(tmp_path: Path) -> None:
    root = tmp_path / "project"
    write_tree(root, {"pyproject.toml": b"[tool.graphlint]\n", "sgl/helpers.py": HELPERS.encode(), "sgl/run.py": RUN.encode()})
    session = CheckSession(root, use_cache=False)

    def check(unsaved: dict[Path, str] | None = None) -> set[tuple[str, str]]:
        files = sorted(root.rglob("*.py"))
        found = summary(session.check(files, unsaved).findings)
        assert found == summary(CheckSession(root, use_cache=False).check(files, unsaved).findings)
        return {(Path(f[0]).relative_to(root).as_posix(), f[3]) for f in found}

    assert check() == {("sgl/helpers.py", "GL202")}
    other = root / "other.py"
    other.write_text("import sgl\n", encoding="utf-8")  # a new file: ``sgl`` names the package
    session.refresh()
    assert check() == set()
    assert check({other: "import os\n"}) == {("sgl/helpers.py", "GL202")}  # its import changed, unsaved
    assert check() == set()
    other.rename(root / "user.py")  # renamed: still imports ``sgl``
    session.refresh()
    assert check() == set()
    (root / "user.py").unlink()  # removed: the naming before it
    session.refresh()
    assert check() == {("sgl/helpers.py", "GL202")}
    run = root / "sgl" / "run.py"
    assert check({run: RUN.replace("fast = torch.compile(count_valid)", "fast = count_valid")}) == set()  # an edit
    assert check({run: RUN}) == {("sgl/helpers.py", "GL202")}  # and undone
    jitted = RUN.replace("torch.compile", "mylib.jit")
    assert check({run: jitted}) == set()
    (root / "pyproject.toml").write_text('[tool.graphlint]\ncompile-entrypoints = ["mylib.jit"]\n', encoding="utf-8")
    assert check({run: jitted}) == {("sgl/helpers.py", "GL202")}  # the same text, read for other entry points
    (root / "sgl" / "helpers.py").rename(root / "sgl" / "util.py")
    run.write_text(RUN.replace("from helpers", "from util"), encoding="utf-8")
    session.refresh()
    assert check() == {("sgl/util.py", "GL202")}


paths = st.sampled_from([Path(f"/p/m{i}.py") for i in range(5)])
file_facts = st.builds(
    lambda names: FileFacts(imports={f"n{i}": name for i, name in enumerate(names)}),
    st.lists(st.sampled_from(["torch", "torch.nn", "sgl.a", ".local", "..up", "os", ""]), max_size=3),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(paths, st.integers(0, 3)), min_size=1, max_size=8), st.lists(file_facts, min_size=4, max_size=4))
def test_kept_imported_heads_are_those_of_every_files_imports(
    checks: list[dict[Path, int]], pool: list[FileFacts]
) -> None:
    """Each check a project of files from a few facts objects (a file keeps its facts, takes
    another's, or is gone): the heads kept are those taken from scratch."""
    heads = ImportedHeads()
    for check in checks:
        facts = {path: pool[index] for path, index in check.items()}
        assert heads.of(facts) == imported_heads(name for f in facts.values() for name in f.imports.values())


def test_a_kept_solve_key_part_is_taken_again_only_for_the_same_facts_and_module_name(tmp_path: Path) -> None:
    """The same facts under other module names solve another graph (``from helpers import``
    resolves only while ``helpers.py`` is named ``helpers``), and so do other facts under the
    same name (``run.py`` edited: one more call)."""
    edited_text = f"{RUN}count_valid(None)\n"
    write_tree(tmp_path, {"helpers.py": HELPERS.encode(), "run.py": RUN.encode(), "edited/run.py": edited_text.encode()})
    paths = [tmp_path / "helpers.py", tmp_path / "run.py", tmp_path / "edited" / "run.py"]
    helpers, run, edited_run = (collect_facts(paths, extract_options_of(Knowledge()), None, 1)[path] for path in paths)
    named = [LinkedModule("helpers", False, helpers), LinkedModule("run", False, run)]
    renamed = [LinkedModule("sgl.helpers", False, helpers), named[1]]
    edited = [named[0], LinkedModule("run", False, edited_run)]
    graphs = SolvedGraphs()
    for files in (named, renamed, named, edited, renamed, edited, named):
        assert graphs.graph(files, {}) == solve(files, {}, {})
    assert graphs.graph(named, {}) != graphs.graph(renamed, {}) and graphs.graph(named, {}) != graphs.graph(edited, {})
