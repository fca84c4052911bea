"""``graphlint server`` driven by a real LSP client over stdio (``client.py``), on small projects
written in the shape of real ones: a helper in one file, the model in another, the compile call
in a third."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lsprotocol import types

from tests.server.client import GRAPHLINT, Editor, apply_edits, uri

HELPERS = textwrap.dedent("""\
    import torch


    def build_positions(x):
        return torch.arange(x.shape[1]).to(x.device)


    def unused_elsewhere(x):
        return x.cpu()
""")
MODEL = textwrap.dedent("""\
    from torch import nn

    from .helpers import build_positions


    class Decoder(nn.Module):
        def forward(self, x):
            return x + build_positions(x)
""")
RUN_CAPTURED = textwrap.dedent("""\
    import torch

    from .model import Decoder


    def build():
        return torch.compile(Decoder(), mode="reduce-overhead")
""")
RUN_COMPILED = RUN_CAPTURED.replace(', mode="reduce-overhead"', "")
RUN_EAGER = RUN_CAPTURED.replace('torch.compile(Decoder(), mode="reduce-overhead")', "Decoder()")
COPY_LINE = 4  # 0-based: `return torch.arange(x.shape[1]).to(x.device)`


def write_project(tmp_path: Path, helpers: str = HELPERS, model: str = MODEL, run: str = RUN_CAPTURED) -> Path:
    """A project of one package ``pkg`` (``helpers.py``, ``model.py``, ``run.py``) under ``tmp_path``."""
    root = tmp_path / "project"
    package = root / "pkg"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
    for name, text in {"__init__.py": "", "helpers.py": helpers, "model.py": model, "run.py": run}.items():
        (package / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path)


def editor(project: Path, tmp_path: Path, *args: str, **kwargs: object) -> Editor:
    return Editor(project, "--cache-dir", str(tmp_path / "cache"), "--debounce", "0.05", *args, **kwargs)  # type: ignore[arg-type]


def codes(diagnostics: list[types.Diagnostic]) -> list[tuple[str, int, types.DiagnosticSeverity | None]]:
    return sorted((str(d.code), d.range.start.line, d.severity) for d in diagnostics)


def run(coroutine: object) -> None:
    asyncio.run(coroutine)  # type: ignore[arg-type]


ERROR, WARNING = types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning


def test_a_helper_is_an_error_because_a_model_compiled_in_another_file_reaches_it(project, tmp_path):
    helpers, run_py = project / "pkg" / "helpers.py", project / "pkg" / "run.py"

    async def session() -> None:
        async with editor(project, tmp_path) as ed:
            ed.open(helpers)
            found = await ed.diagnostics(helpers)
            assert codes(found) == [("GL201", COPY_LINE, ERROR), ("GL203", COPY_LINE, ERROR)]
            copy = next(d for d in found if d.code == "GL201")
            assert copy.source == "graphlint"
            assert (copy.range.start.character, copy.range.end.character) == (11, 48)
            assert "capture at pkg/run.py:7 via Decoder.forward → build_positions" in copy.message
            # The entry, then each step of the chain where it is entered: the compiled
            # forward's ``def``, then the call of the helper in it.
            related = copy.related_information or []
            where = [(r.location.uri, r.location.range.start.line, r.message) for r in related]
            model = project / "pkg" / "model.py"
            assert where[1:] == [(uri(model), 6, "runs Decoder.forward"), (uri(model), 7, "calls build_positions")]
            assert where[0][:2] == (uri(run_py), 6) and "Decoder.forward → build_positions" in where[0][2]

            # The other file, edited and not saved: the same helper is only compiled now (warnings),
            ed.open(run_py)
            version = ed.change(run_py, RUN_COMPILED)
            assert codes(await ed.diagnostics(helpers, lambda p: p.diagnostics != found)) == [
                ("GL201", COPY_LINE, WARNING), ("GL203", COPY_LINE, WARNING)]
            assert await ed.diagnostics(run_py, version=version) == []
            # then eager code: nothing reaches it.
            ed.change(run_py, RUN_EAGER)
            assert await ed.diagnostics(helpers, lambda p: not p.diagnostics) == []
            assert run_py.read_text(encoding="utf-8") == RUN_CAPTURED  # unsaved: the disk is untouched
            # Back to the text on disk, and the error is back.
            ed.change(run_py, RUN_CAPTURED)
            assert codes(await ed.diagnostics(helpers, lambda p: bool(p.diagnostics))) == codes(found)

    run(session())


def test_the_edited_file_itself_and_a_save(project, tmp_path):
    helpers = project / "pkg" / "helpers.py"
    moved = HELPERS.replace("def unused_elsewhere(x):\n    return x.cpu()", "def unused_elsewhere(x):\n    return build_positions(x).cpu()")

    async def session() -> None:
        async with editor(project, tmp_path) as ed:
            ed.open(helpers)
            assert len(await ed.diagnostics(helpers)) == 2
            # A new line above shifts the findings down, before any save.
            version = ed.change(helpers, "# a comment\n" + HELPERS)
            shifted = await ed.diagnostics(helpers, version=version)
            assert {d.range.start.line for d in shifted} == {COPY_LINE + 1}
            # Text that does not parse is GL000 at the error, not a crash and not silence.
            version = ed.change(helpers, HELPERS + "\ndef broken(:\n")
            [broken] = await ed.diagnostics(helpers, version=version)
            assert broken.code == "GL000" and broken.severity == ERROR and broken.range.start.line == 10
            ed.change(helpers, moved)
            ed.save(helpers)
            assert len(await ed.diagnostics(helpers, lambda p: len(p.diagnostics) == 2)) == 2

    run(session())


def test_hover_on_a_finding_shows_the_rule_documentation(project, tmp_path):
    helpers = project / "pkg" / "helpers.py"
    explained = subprocess.run([sys.executable, str(GRAPHLINT), "explain", "GL201"], capture_output=True, text=True,
                               check=True).stdout

    async def session() -> None:
        async with editor(project, tmp_path) as ed:
            ed.open(helpers)
            await ed.diagnostics(helpers)
            hover = await ed.hover(helpers, COPY_LINE, 45)  # on `.to(x.device)`
            assert hover is not None and isinstance(hover.contents, types.MarkupContent)
            assert hover.contents.kind == types.MarkupKind.Markdown
            assert hover.contents.value.startswith("**GL201** `host-device-copy-in-capture` (error)")
            assert explained.strip() in hover.contents.value
            assert await ed.hover(helpers, 0, 0) is None  # `import torch`: no finding there

    run(session())


def test_a_safe_fix_is_offered_as_a_quick_fix_and_fixes_the_buffer(project, tmp_path):
    helpers = project / "pkg" / "helpers.py"

    async def session() -> None:
        async with editor(project, tmp_path) as ed:
            ed.open(helpers)
            found = await ed.diagnostics(helpers)
            copy = next(d for d in found if d.code == "GL201")
            actions = await ed.code_actions(helpers, copy, only=[types.CodeActionKind.QuickFix])
            [fix] = actions
            assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
            assert "device=" in fix.title and "GL201" in fix.title
            assert fix.edit is not None and fix.edit.changes is not None
            fixed = apply_edits(HELPERS, fix.edit.changes[uri(helpers)])
            assert "return torch.arange(x.shape[1], device=x.device)\n" in fixed
            assert fixed.replace("torch.arange(x.shape[1], device=x.device)", "torch.arange(x.shape[1]).to(x.device)") == HELPERS
            # The fixed buffer has no finding left on that line (GL203 is settled by the same fix).
            version = ed.change(helpers, fixed)
            assert await ed.diagnostics(helpers, version=version) == []

    run(session())


NESTED = textwrap.dedent("""\
    import torch


    @torch.compile
    def inner(x):
        return x + 1


    def outer(x):
        return inner(x) * 2


    def capture(g, x):
        with torch.cuda.graph(g):
            return outer(x)
""")


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe-only", "unsafe-fixes"])
def test_an_unsafe_fix_is_offered_only_when_configured(project, tmp_path, unsafe):
    nested = project / "pkg" / "nested.py"
    nested.write_text(NESTED, encoding="utf-8")
    args = ("--unsafe-fixes",) if unsafe else ()

    async def session() -> None:
        async with editor(project, tmp_path, *args) as ed:
            ed.open(nested)
            [diagnostic] = await ed.diagnostics(nested)
            assert diagnostic.code == "GL101" and diagnostic.range.start.line == 3
            actions = await ed.code_actions(nested, diagnostic)
            if not unsafe:
                assert actions == []
                return
            [fix] = actions
            assert "(unsafe)" in fix.title and not fix.is_preferred
            fixed = apply_edits(NESTED, fix.edit.changes[uri(nested)])  # type: ignore[union-attr,index]
            assert fixed == NESTED.replace("@torch.compile\ndef inner", "def inner")

    run(session())


def test_the_same_tool_graphlint_config_applies(project, tmp_path):
    helpers = project / "pkg" / "helpers.py"
    (project / "pyproject.toml").write_text('[tool.graphlint]\nignore = ["GL203"]\n', encoding="utf-8")

    async def session() -> None:
        async with editor(project, tmp_path) as ed:
            ed.open(helpers)
            assert codes(await ed.diagnostics(helpers)) == [("GL201", COPY_LINE, ERROR)]
            # A typo in the config is said, once, and the server goes on.
            (project / "pyproject.toml").write_text('[tool.graphlint]\nignroe = ["GL203"]\n', encoding="utf-8")
            ed.change(helpers, HELPERS + "\n")
            for _ in range(200):
                if ed.messages:
                    break
                await asyncio.sleep(0.05)
            [message] = ed.messages
            assert message.type == types.MessageType.Error and "ignroe" in message.message
            (project / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
            version = ed.change(helpers, HELPERS)
            assert len(await ed.diagnostics(helpers, version=version)) == 2

    run(session())


def test_initialization_options_are_checked(project, tmp_path):
    helpers = project / "pkg" / "helpers.py"

    async def session() -> None:
        options = {"select": ["GL203"], "debounce": "soon", "colour": "red"}
        async with editor(project, tmp_path, initialization_options=options) as ed:
            ed.open(helpers)
            assert codes(await ed.diagnostics(helpers)) == [("GL203", COPY_LINE, ERROR)]
            problems = sorted(m.message for m in ed.messages)
            assert len(problems) == 2 and "debounce" in problems[0] and "colour" in problems[1]

    run(session())


def test_without_pygls_the_command_says_how_to_get_it(tmp_path):
    blocker = tmp_path / "sitecustomize.py"  # makes pygls unimportable in that process only
    blocker.write_text(textwrap.dedent("""\
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "pygls" or name.startswith("pygls."):
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, Block())
    """), encoding="utf-8")
    env = {"PYTHONPATH": f"{tmp_path}:{Path(__file__).resolve().parents[2]}"}
    result = subprocess.run([sys.executable, str(GRAPHLINT), "server"], capture_output=True, text=True, env=env,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 2 and "pip install 'graphlint[lsp]'" in result.stderr


EXTENDED_HELPERS = textwrap.dedent("""\
    import torch


    def build_positions(x):
        return torch.arange(x.shape[1]).to(x.device)


    def to_host(x):
        return x.cpu()


    LOGGED = to_host(torch.ones(2))
""")
EXTENDED_MODEL = textwrap.dedent("""\
    from torch import nn

    from .helpers import build_positions, to_host


    class Decoder(nn.Module):
        def forward(self, x):
            y = x + build_positions(x)
""")
TO_HOST_LINE = 8  # 0-based: `return x.cpu()`


def test_an_added_call_into_a_compiled_region_extends_the_solved_graph(project, tmp_path):
    """An edit that appends a call to the compiled ``forward`` (a call fact the value flow
    follows) is solved by extending the kept solve, not solving the project again, and the
    helper it reaches gets its finding; undone, the finding goes. A call inserted in the middle
    of the file (which numbers the calls after it anew) extends it too (``renumber.py``); a
    removal is solved in full, and the log says why."""
    helpers, model = project / "pkg" / "helpers.py", project / "pkg" / "model.py"
    helpers.write_text(EXTENDED_HELPERS, encoding="utf-8")
    model.write_text(EXTENDED_MODEL, encoding="utf-8")
    (project / "pkg" / "run.py").write_text(RUN_COMPILED, encoding="utf-8")

    def lines(diagnostics: list[types.Diagnostic]) -> set[int]:
        return {d.range.start.line for d in diagnostics}

    async def session() -> None:
        async with editor(project, tmp_path) as ed:
            ed.open(helpers)
            before = await ed.diagnostics(helpers)
            assert lines(before) == {COPY_LINE}  # build_positions only: to_host runs eagerly
            assert any(m.startswith("value flow solved in full") for m in ed.logs), ed.logs
            ed.open(model)
            logged = len(ed.logs)
            ed.change(model, EXTENDED_MODEL + "        z = to_host(x)\n")
            reached = await ed.diagnostics(helpers, lambda p: TO_HOST_LINE in lines(p.diagnostics))
            assert {(d.code, d.severity) for d in reached if d.range.start.line == TO_HOST_LINE} == {("GL201", WARNING)}
            assert [m for m in ed.logs[logged:] if m.startswith("value flow")][0].startswith("value flow extended in place"), ed.logs
            ed.change(model, EXTENDED_MODEL)  # undone
            assert lines(await ed.diagnostics(helpers, lambda p: TO_HOST_LINE not in lines(p.diagnostics))) == {COPY_LINE}
            inserted = EXTENDED_MODEL.replace("class Decoder", "Z = to_host(None)\n\n\nclass Decoder")
            logged = len(ed.logs)
            ed.change(model, inserted + "        z = to_host(x)\n")
            await ed.diagnostics(helpers, lambda p: TO_HOST_LINE in lines(p.diagnostics))
            assert [m for m in ed.logs[logged:] if m.startswith("value flow")][0].startswith("value flow extended in place"), ed.logs
            logged = len(ed.logs)
            ed.change(model, inserted)  # the compiled call removed: not an addition
            await ed.diagnostics(helpers, lambda p: TO_HOST_LINE not in lines(p.diagnostics))
            assert [m for m in ed.logs[logged:] if m.startswith("value flow")][0].startswith(
                "value flow solved in full: not an addition: calls or assignments changed or renumbered"), ed.logs

    run(session())
