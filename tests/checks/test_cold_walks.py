"""The shortcuts that make a cold check cheap (issue 12) read real trees exactly as the plain
ways do: libcst's parse without its node validation, the walks' own child lists, the facts'
JSON, the garbage collector's state during a walk and after a pool."""

from __future__ import annotations

import ast
import dataclasses
import gc
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from graphlint.checks import collect
from graphlint.checks.ast_children import child_nodes
from graphlint.checks.collect import SERIAL_BELOW, collect_facts
from graphlint.checks.extract import extract_facts
from graphlint.checks.unvalidated_parse import parse_unvalidated
from graphlint.checks.facts import ExtractOptions, FileFacts
from graphlint.checks.flow_scopes import ScopeScan
from graphlint.checks.known_values import ChangedNames, _note_changed
from graphlint.checks.syntax import NodeTypes, children, preorder

TORCH = Path(importlib.util.find_spec("torch").origin).parent  # read, never imported
REAL_FILES = [TORCH / "_dynamo" / "eval_frame.py", TORCH / "_tensor.py", TORCH / "nn" / "modules" / "module.py"]
MATCH_AND_FRIENDS = '''\
import torch
global_count: int = 0
def f(x, /, y=1, *args, k: "torch.Tensor" = None, **kw):
    global global_count
    match x:
        case {"a": 1, **rest} if rest: return rest
        case [1, *others]: return others
        case torch.Size(n=2) | None: pass
    try:
        d = {**kw, "y": y}
    except* ValueError as e:
        del d
    async def g():
        async with torch.no_grad() as z, lock: await z
        return [i async for i in aiter(d) if i], f"{x!r:>{y}}"
    return lambda q=y: (q := q + 1), x if y else -x
'''


def _generic_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Every field's nodes, filtered at run time, with ``children``' skips: the oracle."""
    skipped = {"lpar", "rpar", "leading_lines", "lines_after_decorators", "trailing_whitespace", "comma", "equal",
               "semicolon", "header", "footer", "indent", "lbracket", "rbracket", "lbrace", "rbrace", "colon", "dot",
               "star", "asynchronous", "operator", "encoding", "default_indent", "default_newline",
               "has_trailing_newline", "conversion", "posonly_ind", "whitespace_after_star", "whitespace_after_param"}
    names = [f.name for f in dataclasses.fields(node)]
    order = {cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
             cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
             cst.IfExp: ("body", "test", "orelse"),
             cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
             cst.Arg: ("keyword", "value"), cst.MatchCase: ("pattern", "guard", "body")}.get(type(node), names)
    found: list[cst.CSTNode] = []
    for name in order:
        if name in skipped or name.startswith("whitespace"):
            continue
        value = getattr(node, name)
        items = value if isinstance(value, (list, tuple)) else [value]
        found.extend(item for item in items if isinstance(item, cst.CSTNode))
    return found


def _sources() -> list[str]:
    return [path.read_text(encoding="utf-8") for path in REAL_FILES] + [MATCH_AND_FRIENDS]


@pytest.mark.parametrize("index", range(len(REAL_FILES) + 1))
def test_unvalidated_parse_is_the_parse_and_validation_comes_back(index: int) -> None:
    text = _sources()[index]
    assert parse_unvalidated(text).deep_equals(cst.parse_module(text))
    with pytest.raises(cst.CSTValidationError):  # nodes built afterwards are checked again
        cst.Name("not a name")


@pytest.mark.parametrize("index", range(len(REAL_FILES) + 1))
def test_libcst_children_are_every_code_field_in_source_order(index: int) -> None:
    for node in preorder(cst.parse_module(_sources()[index])):
        assert children(node) == _generic_children(node), type(node).__name__


@pytest.mark.parametrize("index", range(len(REAL_FILES) + 1))
def test_ast_children_are_iter_child_nodes_less_contexts_and_operators(index: int) -> None:
    markers = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    for node in ast.walk(ast.parse(_sources()[index])):
        expected = [c for c in ast.iter_child_nodes(node) if not isinstance(c, markers)]
        assert child_nodes(node) == expected, type(node).__name__


def test_facts_text_is_the_json_of_every_field() -> None:
    facts = extract_facts(REAL_FILES[0].read_bytes(), ExtractOptions())
    data = json.loads(facts.to_text())
    assert data == json.loads(json.dumps(dataclasses.asdict(facts)))
    assert FileFacts.from_text(facts.to_text()) == FileFacts.from_json(data)
    assert data["flow"]["calls"] and data["candidates"]  # a real file: something to compare


def test_node_types_answer_as_isinstance() -> None:
    """``NodeTypes`` (a type's answer remembered) is isinstance() of every node of a real file,
    for single classes, tuples, and abstract bases that libcst's classes derive from."""
    tests = [(cst.Name,), (cst.Return, cst.Yield), (cst.BaseExpression,), (cst.BaseCompoundStatement, cst.Lambda)]
    remembered = [NodeTypes(*types) for types in tests]
    nodes = list(preorder(parse_unvalidated(MATCH_AND_FRIENDS)))
    for node in nodes:
        for types, test in zip(tests, remembered):
            assert test[type(node)] is isinstance(node, types), (type(node).__name__, types)
    assert all(any(test[type(node)] for node in nodes) for test in remembered)  # each holds of some node


def test_a_pool_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path) -> None:
    for i in range(SERIAL_BELOW):
        (tmp_path / f"m{i}.py").write_text(f"import torch\ndef f{i}(x):\n    return torch.compile(x)\n")
    files = sorted(tmp_path.glob("*.py"))
    assert gc.isenabled()
    facts = collect_facts(files, ExtractOptions(), None, jobs=2)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert all(f.error is None and f.entries for f in facts.values())


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def changed_names(node: ast.AST) -> set[str]:
    """The plain walk: every node of the subtree, a definition adding every name in it."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, _DEFINITIONS):
            found.update(n.id for n in ast.walk(sub) if isinstance(n, ast.Name))
        else:
            _note_changed(sub, found)
    return found


def closure_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The plain walk: the names in each definition inside the body, walked again for each."""
    body = node.body if isinstance(node.body, list) else [node.body]
    return {
        n.id
        for statement in body
        for sub in ast.walk(statement)
        if isinstance(sub, _DEFINITIONS)
        for n in ast.walk(sub)
        if isinstance(n, ast.Name)
    }


def test_a_file_is_parsed_and_walked_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's walk runs no cyclic collection (each would scan the trees built so far), and
    leaves the collector as it found it."""
    enabled: list[bool] = []

    def walk(source: bytes, options: ExtractOptions) -> FileFacts:
        enabled.append(gc.isenabled())
        return extract_facts(source, options)

    monkeypatch.setattr(collect, "extract_facts", walk)
    assert gc.isenabled()
    facts, key = collect._extract(REAL_FILES[0], ExtractOptions())
    assert enabled == [False] and gc.isenabled()
    assert facts.error is None and facts.candidates and key is not None


# In a fresh interpreter, as a pool's parent: what the walk of a real file imports and reads
# (every file it opens) after ``prepare_walk`` (argv[2] == "prepared") or without it.
_FIRST_WALK = """
import json, sys
import graphlint.checks.engine  # the parent's own imports, before it forks a pool
from graphlint.checks.extract import extract_facts
from graphlint.checks.walk_dispatch import prepare_walk
from graphlint.checks.facts import ExtractOptions
if sys.argv[2] == "prepared":
    prepare_walk()
source = open(sys.argv[1], "rb").read()
read, before = [], set(sys.modules)
sys.addaudithook(lambda event, args: read.append(str(args[0])) if event == "open" else None)
facts = extract_facts(source, ExtractOptions())
print(json.dumps([sorted(set(sys.modules) - before), read, len(facts.candidates)]))
"""


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "unprepared"])
def test_a_worker_forked_after_prepare_walk_loads_nothing_at_its_first_file(prepared: bool) -> None:
    """``prepare_walk`` loads (before a pool forks) all the first walk of a file would: no
    module is imported and no file opened after it; without it, the rules and dynamo's table
    are, in each worker."""
    result = subprocess.run([sys.executable, "-c", _FIRST_WALK, str(REAL_FILES[0]), "prepared" if prepared else "no"],
                            capture_output=True, text=True, timeout=120, check=True)
    imported, read, candidates = json.loads(result.stdout)
    assert candidates > 0  # a real file: rules reported on it
    if prepared:
        assert (imported, read) == ([], [])
    else:
        assert "graphlint.checks.rules.sync_in_capture" in imported and any(p.endswith("dynamo.toml") for p in read)


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_a_walk_leaves_no_tree_to_the_collector(path: Path) -> None:
    """What a paused collector leaves after a file is a few closures of cyclic garbage: no cycle
    holds either tree (which would stay until the next collection, and cost it a scan)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        extract_facts(path.read_bytes(), ExtractOptions())
        gc.collect()
        garbage = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not [g for g in garbage if isinstance(g, (cst.CSTNode, ast.AST))]
    assert len(garbage) < 5000


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_the_changed_names_of_nested_statements_are_the_plain_walks(path: Path) -> None:
    """``ChangedNames`` answers each statement from its nested statements' memoized answers;
    asked outermost first, as the flow walk asks, every answer is the whole-subtree walk's."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    memoized = ChangedNames()
    statements = [node for node in ast.walk(tree) if isinstance(node, (ast.stmt, ast.Lambda))]
    assert len(statements) > 500  # a real file: hundreds of statements, many nested
    for node in statements:  # breadth first: an outer statement before the ones inside it
        assert memoized(node) == changed_names(node), ast.unparse(node)[:200]


def test_the_changed_names_of_every_form_are_the_plain_walks() -> None:
    tree = ast.parse(MATCH_AND_FRIENDS)
    memoized = ChangedNames()
    for node in ast.walk(tree):
        if isinstance(node, (ast.stmt, ast.Lambda)):
            assert memoized(node) == changed_names(node), ast.unparse(node)


NESTED_DEFINITIONS = '''\
def outer(a):
    import os.path as p, sys
    def middle(b):
        global g
        class Local:
            def method(self):
                try:
                    return lambda c: (c, a, b, self)
                except OSError as error:
                    from x import *
                    match error:
                        case [1, *rest] | {"k": _ as bound}:
                            return rest
        return Local, lambda: middle(b)
    return middle
'''


@pytest.mark.parametrize("index", range(len(REAL_FILES) + 2))
def test_the_closure_names_of_nested_functions_are_the_plain_walks(index: int) -> None:
    """``closure_names`` answers each function from the definitions the scope scan found in it
    (``ScopeScan.defined``) and their memoized names; asked outermost first (as the flow walk
    asks) or innermost first, every answer is the plain walk's, and a definition's own
    ``changed_names`` too."""
    tree = ast.parse([*_sources(), NESTED_DEFINITIONS][index])
    defined = ScopeScan.of(tree).defined
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    assert any(closure_names(f) for f in functions)  # functions that define functions
    for order in (functions, functions[::-1]):
        memoized = ChangedNames()
        for node in order:
            assert memoized.closure_names(defined.get(id(node), ())) == closure_names(node), ast.unparse(node)[:200]
            assert memoized(node) == changed_names(node), ast.unparse(node)[:200]
