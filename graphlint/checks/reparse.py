"""libcst parses of successive texts of a file that reuse the top-level statements that did not
change: the parse an editor's buffer needs at each edit (``session.py``).

A libcst parse is most of the cost of walking a file (55–70% on transformers' modeling files),
and an edit changes one or two top-level statements of it. The text is cut where Python's own
parser (run first anyway) says each top-level statement starts; each piece is parsed on its own
unless an earlier text had exactly that piece, and the module is assembled from the pieces'
statements, with the comments and blank lines between them where a whole-file parse puts them
(before the next statement), so that the module gives the text back as a whole-file parse does.
A piece that does not parse on its own (none should: a top-level statement is complete)
makes the whole text parse the ordinary way, and so does a text libcst refuses or one that mixes
kinds of line break (each piece would write its own). A piece met twice in one text is parsed
twice: the walk keys what it learns of a node by ``id()``. The parser also holds what the walk
learns of the nodes it shares between texts (``kept_answers.py``).
"""

from __future__ import annotations

import ast
import io
from collections import OrderedDict

import libcst as cst

from graphlint.checks.kept_answers import KeptAnswers

_PIECES_KEPT = 20_000  # top-level statements of recent texts (a large modeling file has ~100)


class StatementParser:
    """``parser(text, tree)`` → the libcst module of ``text``; ``tree`` is its ``ast``."""

    def __init__(self, kept: int = _PIECES_KEPT) -> None:
        self._kept = kept
        self._pieces: OrderedDict[str, cst.Module] = OrderedDict()
        # (text of a piece, text of the piece after it) → that one's first statement, with the
        # lines between them before it: the same node again while neither piece changes
        self._joined: OrderedDict[tuple[str, str], cst.BaseStatement] = OrderedDict()
        self.parsed = 0  # pieces parsed (not reused): what tests and benchmarks look at
        self.answers = KeptAnswers()  # about the nodes of the modules given (``extract.py``)

    def __call__(self, text: str, tree: ast.Module) -> cst.Module:
        module = self._parse(text, tree)
        self.answers.hold(module)
        return module

    def _parse(self, text: str, tree: ast.Module) -> cst.Module:
        texts = [piece for piece, _ in statement_pieces(text, tree)]
        if len(texts) < 2:
            return cst.parse_module(text)
        # A piece met twice in one text is parsed again the second time: one node in two places
        # of a module would be one call, one report, one anchor for the walk (keyed by ``id()``).
        again: list[bool] = []
        seen: set[str] = set()
        for piece in texts:
            again.append(piece in seen)
            seen.add(piece)
        try:
            modules = [cst.parse_module(piece) if twice else self._piece(piece) for piece, twice in zip(texts, again)]
        except cst.ParserSyntaxError:
            return cst.parse_module(text)
        if len({module.default_newline for module in modules}) > 1:
            return cst.parse_module(text)  # mixed line breaks: a piece's are not the module's
        body: list[cst.BaseStatement] = []
        between: tuple[cst.EmptyLine, ...] = ()
        for index, module in enumerate(modules):
            statements = list(module.body)
            if not statements:  # a piece of comments only: cannot happen with ast's starts
                return cst.parse_module(text)
            if between and again[index]:
                statements[0] = _joined(between, statements[0])
            elif between:
                statements[0] = self._joined_first(texts[index - 1], texts[index], between, statements[0])
            body.extend(statements)
            between = tuple(module.footer)
        first, last = modules[0], modules[-1]
        return cst.Module(
            body=body,
            header=first.header,
            footer=last.footer,
            encoding=first.encoding,
            default_indent=first.default_indent,
            default_newline=first.default_newline,
            has_trailing_newline=last.has_trailing_newline,
        )

    def _joined_first(
        self, before: str, piece: str, between: tuple[cst.EmptyLine, ...], first: cst.BaseStatement
    ) -> cst.BaseStatement:
        key = (before, piece)
        joined = self._joined.get(key)
        if joined is None:
            joined = self._joined[key] = _joined(between, first)
            while len(self._joined) > self._kept:
                self._joined.popitem(last=False)
        else:
            self._joined.move_to_end(key)
        return joined

    def _piece(self, text: str) -> cst.Module:
        module = self._pieces.get(text)
        if module is None:
            module = cst.parse_module(text)
            self.parsed += 1
            self._pieces[text] = module
            while len(self._pieces) > self._kept:
                self._pieces.popitem(last=False)
        else:
            self._pieces.move_to_end(text)
        return module


def statement_pieces(text: str, tree: ast.Module) -> list[tuple[str, list[ast.stmt]]]:
    """``text`` cut where each top-level statement of ``tree`` (its ``ast``) starts (its first
    decorator's line): each piece's text, from that line to the next piece's, with the
    statements that start in it (several where ``;`` puts them on one line). A piece's text is
    all there is to know of its statements but their lines: a whole-file parse has them."""
    groups: dict[int, list[ast.stmt]] = {}
    for node in tree.body:
        groups.setdefault(_first_line(node), []).append(node)
    starts = list(groups)
    lines = io.StringIO(text, newline="").readlines()  # breaks at \r\n, \r and \n, as ast counts
    bounds = [0, *(start - 1 for start in starts[1:]), len(lines)]
    return [("".join(lines[a:b]), groups[start]) for start, a, b in zip(starts, bounds, bounds[1:])]


def _joined(between: tuple[cst.EmptyLine, ...], first: cst.BaseStatement) -> cst.BaseStatement:
    """``first`` with the lines between it and the statement before it (the footer of the piece
    before) in front, where a whole-file parse puts them."""
    return first.with_changes(leading_lines=[*between, *first.leading_lines])


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])
