"""The language server: open documents in, diagnostics, hovers and code actions out.

Every check goes through ``checks.session.CheckSession``, one per project root (the nearest
``pyproject.toml`` or ``.git`` above a document, as for ``graphlint check``): the whole project
is linked, with the text of every open document standing in for its file, so that editing the
file that compiles a model changes the diagnostics of the helper it reaches in another open
file. Diagnostics are published for open documents: at once when one opens or is saved, and
``debounce`` seconds after the last change while typing. Every check runs on the server's one
thread, so a check never sees a half-applied change.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from graphlint import __version__
from graphlint.checks.collector import collector_paused
from graphlint.checks.findings import Finding
from graphlint.checks.fix import fix_source
from graphlint.checks.rules import rule_by_code
from graphlint.checks.session import CheckSession
from graphlint.codes.explain import ExplainError, explain
from graphlint.config import ConfigError, find_project_root
from graphlint.server import convert

log = logging.getLogger(__name__)

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.graphlint"
# Files changed outside the editor (a checkout, a generator) are seen this many seconds later
# at most; saves and the client's file events are seen at once.
_STAT_INTERVAL = 2.0


@dataclass
class ServerOptions:
    """The command line's, then the client's ``initializationOptions`` (same names, camelCase)."""

    debounce: float = 0.05  # seconds after the last change before an unsaved text is checked
    unsafe_fixes: bool = False  # offer unsafe fixes as code actions too
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    use_cache: bool = True
    cache_dir: Path | None = None
    jobs: int = 0
    # solve the value flow on another thread once diagnostics are out, and keep the solve (about
    # 2 GB more on transformers' models/): the first edit that changes what flows extends it
    solve_ahead: bool = True

    def update(self, given: Any) -> list[str]:
        """Apply ``initializationOptions``; returns what was wrong with them (nothing is applied
        from a wrong entry, and the others still are)."""
        if given is None:
            return []
        if not isinstance(given, dict):
            return [f"initializationOptions must be an object, not {type(given).__name__}"]
        problems = []
        for key, value in given.items():
            if key == "debounce" and isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                self.debounce = float(value)
            elif key == "unsafeFixes" and isinstance(value, bool):
                self.unsafe_fixes = value
            elif key == "solveAhead" and isinstance(value, bool):
                self.solve_ahead = value
            elif key in ("select", "ignore") and isinstance(value, list) and all(isinstance(v, str) for v in value):
                setattr(self, key, tuple(code.strip().upper() for code in value if code.strip()))
            elif key in ("debounce", "unsafeFixes", "solveAhead", "select", "ignore"):
                problems.append(f"initializationOptions.{key}: {value!r} is not a valid value")
            else:
                problems.append(f"initializationOptions: unknown key {key!r} (known: debounce, unsafeFixes, solveAhead, select, ignore)")
        return problems


@dataclass
class _Checked:
    """What was last published for one open document, for hovers and code actions."""

    version: int | None
    text: str
    findings: list[Finding]


class GraphlintServer(LanguageServer):
    def __init__(self, options: ServerOptions) -> None:
        super().__init__("graphlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.options = options
        self.sessions: dict[Path, CheckSession] = {}
        self.checked: dict[str, _Checked] = {}
        self._pending: asyncio.TimerHandle | None = None
        self._shown_errors: set[str] = set()
        self.option_problems: list[str] = []

    # ---- checking ---------------------------------------------------------------------------
    def session_of(self, path: Path) -> CheckSession:
        root = find_project_root(path)
        session = self.sessions.get(root)
        if session is None:
            session = self.sessions[root] = CheckSession(
                root, select=self.options.select, ignore=self.options.ignore, use_cache=self.options.use_cache,
                cache_directory=self.options.cache_dir, jobs=self.options.jobs, stat_interval=_STAT_INTERVAL,
            )
        return session

    def check_later(self) -> None:
        """Check the open documents ``debounce`` seconds from now, unless another change comes first."""
        if self._pending is not None:
            self._pending.cancel()
        self._pending = asyncio.get_running_loop().call_later(self.options.debounce, self.check_now)

    def check_now(self) -> None:
        """Check every open document and publish what changed (always for documents whose
        version is new)."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        documents = [d for d in self.workspace.text_documents.values() if d.uri.startswith("file:")]
        by_session: dict[Path, list[TextDocument]] = {}
        for document in documents:
            path = Path(to_fs_path(document.uri) or document.path)
            by_session.setdefault(self.session_of(path).root, []).append(document)
        # The cyclic collector waits until the diagnostics are out: a check makes about a million
        # objects, and the collector's passes over them and the project's tables in memory took
        # a third of an edit on transformers' models/ (a young pass per 700 objects, a full one
        # every few edits). Once enabled again, one pass collects what the check left.
        with collector_paused():
            for root, group in by_session.items():
                try:
                    self._check(self.sessions[root], group)
                except ConfigError as exc:
                    self._show_once(types.MessageType.Error, f"graphlint: {exc}")
                except Exception as exc:  # a checker bug: say so, keep serving
                    log.error("graphlint check failed:\n%s", traceback.format_exc())
                    self._show_once(types.MessageType.Error, f"graphlint: internal error: {type(exc).__name__}: {exc}")
        if self.options.solve_ahead:
            for root in by_session:
                self.solve_ahead(self.sessions[root])

    def solve_ahead(self, session: CheckSession) -> None:
        """The value flow of what was just checked solved on another thread while the editor is
        idle, so that the first edit that changes what flows extends it instead of solving in
        full (``SolvedGraphs.solve_ahead``); taken on this thread when it ends."""
        loop = asyncio.get_running_loop()

        def ended() -> None:
            try:
                loop.call_soon_threadsafe(session.take_solved_ahead)
            except RuntimeError:  # the loop closed: the server stopped meanwhile
                pass

        session.solve_ahead(ended)

    def _check(self, session: CheckSession, documents: list[TextDocument]) -> None:
        paths = {document.uri: Path(to_fs_path(document.uri) or document.path).resolve() for document in documents}
        result = session.check(list(paths.values()), {paths[d.uri]: d.source for d in documents})
        by_path: dict[Path, list[Finding]] = {}
        for finding in result.findings:
            by_path.setdefault(finding.file.resolve(), []).append(finding)
        for document in documents:
            found = by_path.get(paths[document.uri], []) if session.contains(paths[document.uri]) else []
            previous = self.checked.get(document.uri)
            self.checked[document.uri] = _Checked(document.version, document.source, found)
            if previous is not None and previous.version == document.version and _same(previous.findings, found):
                continue  # nothing new for this document
            self.publish(document, session.root, found)

    def publish(self, document: TextDocument, root: Path, findings: list[Finding]) -> None:
        lines = convert.lines_of(document.source)
        codec = self.workspace.position_codec
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=document.uri,
                version=document.version,
                diagnostics=[convert.diagnostic(f, lines, codec, root) for f in findings],
            )
        )

    def current(self, uri: str) -> _Checked | None:
        """What was checked of ``uri``, checked again first when the text moved on since."""
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return None
        checked = self.checked.get(uri)
        if checked is None or checked.text != document.source:
            self.check_now()
            checked = self.checked.get(uri)
        return checked

    def _show_once(self, kind: types.MessageType, message: str) -> None:
        log.warning("%s", message)
        if message not in self._shown_errors:
            self._shown_errors.add(message)
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    # ---- hovers and fixes -------------------------------------------------------------------
    def hover(self, uri: str, at: types.Position) -> types.Hover | None:
        checked = self.current(uri)
        if checked is None:
            return None
        lines = convert.lines_of(checked.text)
        codec = self.workspace.position_codec
        for finding in checked.findings:
            where = convert.finding_range(finding, lines, codec)
            if _contains(where, at):
                text = f"**{finding.code}** `{finding.slug}` ({finding.severity}): {finding.message}\n"
                if finding.region is not None:
                    text += f"\n{convert.region_text(finding)}\n"
                try:
                    text += f"\n---\n\n{explain(finding.code)}"  # what `graphlint explain CODE` prints
                except ExplainError:  # a code with no documentation: the message says it all
                    pass
                return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text), range=where)
        return None

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        checked = self.current(uri)
        if checked is None:
            return []
        allowed = [f for f in checked.findings if f.fix == "safe" or (f.fix == "unsafe" and self.options.unsafe_fixes)]
        lines = convert.lines_of(checked.text)
        codec = self.workspace.position_codec
        wanted = params.context.only
        actions = []
        if wanted is None or any(k.startswith(types.CodeActionKind.QuickFix) for k in wanted):
            for finding in allowed:
                where = convert.finding_range(finding, lines, codec)
                if not _overlaps(where, params.range):
                    continue
                action = self._fix_action(uri, checked.text, [finding], types.CodeActionKind.QuickFix)
                if action is not None:
                    action.diagnostics = [convert.diagnostic(finding, lines, codec, self.session_of(finding.file).root)]
                    action.is_preferred = finding.fix == "safe"
                    actions.append(action)
        if wanted is None or any(FIX_ALL.startswith(k) for k in wanted):
            safe = [f for f in checked.findings if f.fix == "safe"]
            action = self._fix_action(uri, checked.text, safe, FIX_ALL) if safe else None
            if action is not None:
                action.title = f"graphlint: fix all safely fixable findings ({len(safe)})"
                actions.append(action)
        return actions

    def _fix_action(self, uri: str, text: str, findings: list[Finding], kind: str) -> types.CodeAction | None:
        fixed = fix_source(text, findings)
        if fixed is None:
            return None
        before, after, _ = fixed
        rule = rule_by_code(findings[0].code)
        safety = "" if findings[0].fix == "safe" else " (unsafe)"
        title = f"graphlint: {rule.fix_title if rule and rule.fix_title else 'fix'}{safety} [{findings[0].code}]"
        edit = convert.replacement(before, after, self.workspace.position_codec)
        return types.CodeAction(title=title, kind=kind, edit=types.WorkspaceEdit(changes={uri: [edit]}))


def _same(a: list[Finding], b: list[Finding]) -> bool:
    return [f.to_json() for f in a] == [f.to_json() for f in b]


def _contains(where: types.Range, at: types.Position) -> bool:
    start, end = (where.start.line, where.start.character), (where.end.line, where.end.character)
    return start <= (at.line, at.character) <= end


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (
        (b.start.line, b.start.character) <= (a.end.line, a.end.character)
    )


class _ClientLog(logging.Handler):
    """The checker's log (how each edit's value flow was solved: extended in place or in full,
    and why) as ``window/logMessage``: an editor shows it in the server's output."""

    def __init__(self, server: GraphlintServer) -> None:
        super().__init__(logging.INFO)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.server.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=self.format(record)))
        except Exception:  # no client to tell (not started, gone): nothing to do
            pass


def build_server(options: ServerOptions) -> GraphlintServer:
    server = GraphlintServer(options)
    solves = logging.getLogger("graphlint.checks.graph_cache")
    solves.setLevel(logging.INFO)
    solves.addHandler(_ClientLog(server))

    @server.feature(types.INITIALIZE)
    def initialize(ls: GraphlintServer, params: types.InitializeParams) -> None:
        ls.option_problems = ls.options.update(params.initialization_options)

    @server.feature(types.INITIALIZED)
    def initialized(ls: GraphlintServer, params: types.InitializedParams) -> None:
        for problem in ls.option_problems:  # said once the client listens
            ls._show_once(types.MessageType.Warning, f"graphlint: {problem}")

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GraphlintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.check_now()

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GraphlintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.check_later()

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: GraphlintServer, params: types.DidSaveTextDocumentParams) -> None:
        for session in ls.sessions.values():
            session.refresh()  # a save may be a new file ("save as")
        ls.check_now()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GraphlintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        checked = ls.checked.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if checked is not None:
            ls.check_later()  # its unsaved text no longer stands in for the file

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: GraphlintServer, params: types.DidChangeWatchedFilesParams) -> None:
        for session in ls.sessions.values():
            session.refresh()
        ls.check_later()

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: GraphlintServer, params: types.HoverParams) -> types.Hover | None:
        return ls.hover(params.text_document.uri, params.position)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    def code_action(ls: GraphlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    return server
