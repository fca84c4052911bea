"""The server's checks run with the cyclic collector off, and leave it as they found it."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.workspace import Workspace

from graphlint.server.protocol import GraphlintServer, ServerOptions, build_server
from tests.server.client import uri


def test_a_check_runs_with_the_collector_off_and_turns_it_on_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
    (tmp_path / "model.py").write_text("import torch\n", encoding="utf-8")
    server = build_server(ServerOptions(solve_ahead=False))  # (no event loop here to take a solve ahead)
    server.protocol._workspace = Workspace(uri(tmp_path))
    server.workspace.put_text_document(types.TextDocumentItem(uri(tmp_path / "model.py"), "python", 1, "import torch\n"))
    during: list[bool] = []
    real = GraphlintServer._check

    def check(self: GraphlintServer, *args: Any) -> None:
        during.append(gc.isenabled())
        real(self, *args)

    monkeypatch.setattr(GraphlintServer, "_check", check)
    monkeypatch.setattr(GraphlintServer, "publish", lambda self, *args: None)  # no client to send to
    assert gc.isenabled()
    server.check_now()
    assert during == [False]
    assert gc.isenabled()
    assert server.checked[uri(tmp_path / "model.py")].findings == []
