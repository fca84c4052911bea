"""A real LSP client (pygls's own ``LanguageClient``) driving ``graphlint server`` in a subprocess
over stdio, as an editor does: the installed console script, JSON-RPC on its stdin and stdout."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

GRAPHLINT = Path(sys.executable).with_name("graphlint")
WAIT = 60.0  # seconds a test waits for the server to publish (a loaded CI machine is slow)


def uri(path: Path) -> str:
    return from_fs_path(str(path.resolve())) or ""


class Editor:
    """One client session: open, edit, save and close documents; wait for what is published."""

    def __init__(self, root: Path, *server_args: str, initialization_options: Any = None, env: dict[str, str] | None = None) -> None:
        """``env``: the server's environment (default: this process's)."""
        self.root = root
        self.server_args = server_args
        self.initialization_options = initialization_options
        self.env = env
        self.client = LanguageClient("graphlint-tests", "1")
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.messages: list[types.ShowMessageParams] = []
        self.logs: list[str] = []  # window/logMessage
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self._arrived = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)
            self._arrived.set()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def logged(params: types.LogMessageParams) -> None:
            self.logs.append(params.message)

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def shown(params: types.ShowMessageParams) -> None:
            self.messages.append(params)
            self._arrived.set()

    async def __aenter__(self) -> Editor:
        await self.client.start_io(sys.executable, str(GRAPHLINT), "server", *self.server_args, cwd=str(self.root), env=self.env)
        self.capabilities = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=uri(self.root),
            workspace_folders=[types.WorkspaceFolder(uri=uri(self.root), name=self.root.name)],
            initialization_options=self.initialization_options,
        )), WAIT)
        self.client.initialized(types.InitializedParams())
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), WAIT)
            self.client.exit(None)
        finally:
            await self.client.stop()

    # ---- documents ------------------------------------------------------------------------
    def open(self, path: Path, text: str | None = None) -> str:
        address = uri(path)
        self.versions[address] = 1
        self.texts[address] = path.read_text(encoding="utf-8") if text is None else text
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=address, language_id="python", version=1, text=self.texts[address])))
        return address

    def change(self, path: Path, text: str) -> int:
        """Replace the whole unsaved text (a full-document change); returns the new version."""
        address = uri(path)
        self.versions[address] += 1
        self.texts[address] = text
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=address, version=self.versions[address]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        return self.versions[address]

    def save(self, path: Path) -> None:
        address = uri(path)
        path.write_text(self.texts[address], encoding="utf-8")
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=address)))

    def close(self, path: Path) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path))))

    # ---- waiting ----------------------------------------------------------------------------
    async def diagnostics(
        self, path: Path, until: Callable[[types.PublishDiagnosticsParams], bool] = lambda p: True,
        *, version: int | None = None, timeout: float = WAIT,
    ) -> list[types.Diagnostic]:
        """The first diagnostics published for ``path`` (at ``version``, when given) that satisfy
        ``until``, among those published since the last call for ``path``."""
        address = uri(path)
        seen = 0

        def found() -> types.PublishDiagnosticsParams | None:
            nonlocal seen
            published = self.published.get(address, [])
            for params in published[seen:]:
                seen += 1
                if (version is None or params.version == version) and until(params):
                    return params
            return None

        async def wait() -> types.PublishDiagnosticsParams:
            while (params := found()) is None:
                self._arrived.clear()
                await self._arrived.wait()
            return params

        params = await asyncio.wait_for(wait(), timeout)
        del self.published[address][:seen]
        return list(params.diagnostics)

    async def hover(self, path: Path, line: int, character: int) -> types.Hover | None:
        return await asyncio.wait_for(self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)),
            position=types.Position(line=line, character=character))), WAIT)

    async def code_actions(self, path: Path, diagnostic: types.Diagnostic,
                           only: list[str] | None = None) -> list[types.CodeAction]:
        result = await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic], only=only))), WAIT)
        return [a for a in result or [] if isinstance(a, types.CodeAction)]


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 positions, as negotiated by default) to ``text``, last first."""
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        before = "".join(lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units = line.encode("utf-16-le")[: position.character * 2].decode("utf-16-le")
        return len(before) + len(units)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
        lines = text.splitlines(keepends=True)
    return text
