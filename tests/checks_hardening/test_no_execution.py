"""``graphlint check`` reads code and never runs it: not the checked files, not a package's
``__init__``, not files named like the modules graphlint itself imports, not the entry points
the configuration names. Every file below would leave a marker if it ran."""

from __future__ import annotations

from pathlib import Path

from tests.checks_hardening.cli import CAPTURE_SYNC, graphlint_check, write_tree


def leaves_marker(marker_dir: Path, name: str) -> str:
    return f"open({str(marker_dir / name)!r}, 'w').close()\n"


def test_check_never_imports_or_executes_the_code_it_reads(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    project = tmp_path / "project"
    # Names of modules that graphlint or Python import at start-up: if the working directory
    # were on sys.path, these would shadow them.
    shadowing = ("libcst", "rich", "json", "torch", "sitecustomize", "usercustomize", "typing_extensions")
    files = {f"{name}.py": leaves_marker(markers, name) for name in shadowing}
    files.update(
        {
            "pkg/__init__.py": leaves_marker(markers, "pkg_init"),
            "pkg/decorators.py": leaves_marker(markers, "decorators")
            + "def graph_mode(fn):\n    " + leaves_marker(markers, "decorator_called") + "    return fn\n",
            "pkg/model.py": leaves_marker(markers, "model")
            + "from pkg.decorators import graph_mode\n"
            + CAPTURE_SYNC.replace('@torch.compile(mode="reduce-overhead")', "@graph_mode")
            + "\n\nif __name__ == '__main__':\n    " + leaves_marker(markers, "main"),
            "setup.py": leaves_marker(markers, "setup"),
            "conftest.py": leaves_marker(markers, "conftest"),
            "pyproject.toml": '[tool.graphlint]\ncapture-entrypoints = ["pkg.decorators.graph_mode"]\n',
        }
    )
    write_tree(project, files)

    run = graphlint_check(".", cwd=project)
    fixed = graphlint_check("--fix", "--unsafe-fixes", "pkg/model.py", "torch.py", cwd=project)

    assert sorted(p.name for p in markers.iterdir()) == []
    # …and the code was really read: the configured entry point made `step` a capture region.
    assert run.by_path()["pkg/model.py"] == [("GL202", 8, 12)]
    assert fixed.returncode == 1
