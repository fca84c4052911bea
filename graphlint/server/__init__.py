"""``graphlint server``: the static check as a Language Server over stdio (pygls; extra ``lsp``).

``command.py`` registers the command (standard library only); ``protocol.py`` is the server:
documents in, diagnostics, hovers and code actions out, all through ``checks.session``;
``convert.py`` turns findings and fixes into LSP objects. See docs/editors.md.
"""
