"""Cut the user's code that a repro needs out of their files, and shrink it (libcst).

``cut`` keeps, from the file defining the target, the definitions (functions, classes, module
names) the target reaches by name, transitively, with the imports they use; a name imported from
another of the user's files is followed into that file and its definition taken from there, so
the result needs none of the project's files. Module-level settings of imported libraries
(``torch._dynamo.config.recompile_limit = 16``) are kept too: they change what dynamo does.
``custom_op_source`` cuts a custom op's definition with its registrations (``@op.register_fake``)
the same way, for graphs that call an op defined in the project.
``shrink`` removes statements one at a time while a check still sees the same failure.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst


@dataclass
class _TopLevel:
    """A file's module-level statements by the names they bind."""

    module: cst.Module
    definitions: dict[str, int] = field(default_factory=dict)  # name → statement index
    imports: dict[str, int] = field(default_factory=dict)
    settings: list[int] = field(default_factory=list)  # ``lib.attr = value`` on an imported module


@dataclass
class Cut:
    imports: list[str] = field(default_factory=list)  # statements, in order of first use
    definitions: list[str] = field(default_factory=list)

    def code(self) -> str:
        return "\n".join(self.imports) + "\n\n\n" + "\n".join(self.definitions)


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def names_used(node: cst.CSTNode) -> set[str]:
    visitor = _Names()
    node.visit(visitor)
    return visitor.names


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _bound_by_import(statement: cst.BaseSmallStatement) -> list[str]:
    if isinstance(statement, cst.ImportFrom) and isinstance(statement.names, cst.ImportStar):
        return []
    names = []
    for alias in statement.names:  # type: ignore[union-attr]
        if alias.asname is not None:
            names.append(cst.ensure_type(alias.asname.name, cst.Name).value)
        else:
            names.append(_root_name(alias.name) or "")
    return names


def _top_level(module: cst.Module) -> _TopLevel:
    table = _TopLevel(module)
    for index, statement in enumerate(module.body):
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            table.definitions[statement.name.value] = index
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                for name in _bound_by_import(small):
                    table.imports[name] = index
            elif isinstance(small, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                for target in targets:
                    if isinstance(target, cst.Name):
                        table.definitions[target.value] = index
                    elif isinstance(target, cst.Attribute) and _root_name(target) in table.imports:
                        table.settings.append(index)
    return table


def installed(file: str) -> bool:
    """Whether ``file`` belongs to an installed package or the standard library (importable from
    anywhere), as opposed to the project's own files, which a repro must not need."""
    import site
    import sysconfig

    paths = {sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib", "platstdlib")}
    paths.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    resolved = Path(file).resolve()
    return not file.startswith("<") and any(resolved.is_relative_to(Path(p).resolve()) for p in paths)


def _project_module_file(importer: Path, dots: int, dotted: str, user_files: set[str]) -> Path | None:
    """The project's file that module ``dotted`` (``dots`` levels up, for a relative import)
    names from ``importer``, or None for a library: a file of ``user_files``, or one that is not
    installed, beside the importer or at the root of the package holding it (where an absolute
    import of the project starts; no higher, where a checkout of a library may lie)."""
    if importer.name.startswith("<"):
        return None  # code compiled from a string imports no file of its own
    bases = [importer.parent.parents[dots - 2] if dots > 1 else importer.parent] if dots else _package_roots(importer)
    for base in bases:
        stem = base.joinpath(*dotted.split(".")) if dotted else base
        for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
            resolved = str(candidate.resolve())
            if resolved in user_files or (candidate.is_file() and not installed(resolved)):
                return candidate
    return None


def _package_roots(importer: Path) -> list[Path]:
    """The importer's folder and those above it up to the root of its package."""
    roots = [importer.parent]
    while (roots[-1] / "__init__.py").is_file() and roots[-1].parent != roots[-1]:
        roots.append(roots[-1].parent)
    return roots


def _attributes_used(module: cst.Module, dotted: str) -> list[str]:
    """The names ``dotted.NAME`` that ``module`` reads (``h.tag`` for ``import pkg.helpers as h``)."""
    found: set[str] = set()

    class Visitor(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if module.code_for_node(node.value) == dotted:
                found.add(node.attr.value)

    module.visit(Visitor())
    return sorted(found)


def _namespace_code(path: list[str], names: list[str]) -> str:
    """``a = types.SimpleNamespace(b=types.SimpleNamespace(tag=tag))`` for ``a.b.tag``."""
    value = "types.SimpleNamespace(" + ", ".join(f"{n}={n}" for n in names) + ")"
    for part in reversed(path[1:]):
        value = f"types.SimpleNamespace({part}={value})"
    return f"{path[0]} = {value}\n"


Selects = Callable[[cst.BaseStatement], bool]


def cut(file: Path, roots: list[str], user_files: set[str], also: Selects | None = None) -> Cut:
    """The definitions ``roots`` reach in ``file`` (and the user's files it imports from), and
    those the module-level statements ``also`` selects reach. ``file`` may name code that was
    compiled from a string and put in ``linecache`` (``<graphlint graph 1>``)."""
    result = Cut()
    _cut_file(file, roots, user_files, result, set(), also)
    return result


class _Strings(cst.CSTVisitor):
    def __init__(self) -> None:
        self.strings: set[str] = set()

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = node.evaluated_value
        self.strings.add(value if isinstance(value, str) else "")


def _strings_used(node: cst.CSTNode) -> set[str]:
    visitor = _Strings()
    node.visit(visitor)
    return visitor.strings


def custom_op_source(file: str, function: str, op: str, user_files: set[str]) -> Cut:
    """The source defining the custom op ``op`` ("ns::name") whose implementation is ``function``
    in ``file``: that function (its decorator registers the op) and every module-level
    registration on it (``@function.register_fake``, ``torch.library.register_kernel("ns::name")``),
    with what they use."""

    def registers(statement: cst.BaseStatement) -> bool:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            parts: list[cst.CSTNode] = list(statement.decorators)
        elif isinstance(statement, cst.SimpleStatementLine):
            parts = [s for s in statement.body if isinstance(s, cst.Expr)]
        else:
            return False
        return any(function in names_used(p) or op in _strings_used(p) for p in parts)

    return cut(Path(file), [function], user_files, registers)


def _source_text(file: Path) -> str:
    if file.name.startswith("<"):  # compiled from a string: linecache holds it
        return "".join(linecache.getlines(str(file)))
    return file.read_text(encoding="utf-8")


def _cut_file(
    file: Path, roots: list[str], user_files: set[str], result: Cut, seen: set[tuple[str, str]], also: Selects | None = None
) -> None:
    table = _top_level(cst.parse_module(_source_text(file)))
    body = table.module.body
    kept: set[int] = set()
    pending = list(roots)
    for index, statement in enumerate(body):
        if also is not None and also(statement):
            kept.add(index)
            pending.extend(names_used(statement))
    for index in table.settings:
        kept.add(index)
        pending.extend(names_used(body[index]))
    while pending:
        name = pending.pop()
        if (str(file), name) in seen:
            continue
        seen.add((str(file), name))
        if name in table.definitions:
            index = table.definitions[name]
            if index not in kept:
                kept.add(index)
                pending.extend(names_used(body[index]))
        elif name in table.imports:
            statement = body[table.imports[name]]
            small = cst.ensure_type(statement, cst.SimpleStatementLine).body[0]
            if not _follow_import(file, table.module, small, name, user_files, result, seen):
                code = table.module.code_for_node(statement).strip()
                if code not in result.imports:
                    result.imports.append(code)
    for index in sorted(kept):
        result.definitions.append(table.module.code_for_node(body[index]))


def _follow_import(
    file: Path, module: cst.Module, statement: cst.BaseSmallStatement, name: str, user_files: set[str],
    result: Cut, seen: set[tuple[str, str]],
) -> bool:
    """Cut what ``name``, bound by the import ``statement``, stands for from the project's file
    it imports: ``from .helpers import tag [as t]`` takes ``tag``; ``import pkg.helpers [as h]``
    takes each ``h.NAME`` the file reads and binds ``h`` to a namespace of them. False: a library."""
    for alias in statement.names:  # type: ignore[union-attr]
        dotted = module.code_for_node(alias.name)
        bound = cst.ensure_type(alias.asname.name, cst.Name).value if alias.asname else dotted.split(".")[0]
        if bound != name:
            continue
        if isinstance(statement, cst.ImportFrom):
            package = module.code_for_node(statement.module) if statement.module is not None else ""
            submodule = _project_module_file(file, len(statement.relative), f"{package}.{dotted}".strip("."), user_files)
            if submodule is not None:  # from pkg import helpers: a module, used as helpers.NAME
                used = _attributes_used(module, bound)
                _cut_file(submodule, used, user_files, result, seen)
                _bind_namespace(result, [bound], used)
                return True
            source = _project_module_file(file, len(statement.relative), package, user_files)
            if source is None:
                return False
            _cut_file(source, [dotted], user_files, result, seen)
            if bound != dotted:
                result.definitions.append(f"{bound} = {dotted}\n")
            return True
        source = _project_module_file(file, 0, dotted, user_files)
        if source is None:
            return False
        used = _attributes_used(module, bound if alias.asname else dotted)
        _cut_file(source, used, user_files, result, seen)
        _bind_namespace(result, [bound] if alias.asname else dotted.split("."), used)
        return True
    return False


def _bind_namespace(result: Cut, path: list[str], names: list[str]) -> None:
    if "import types" not in result.imports:
        result.imports.append("import types")
    result.definitions.append(_namespace_code(path, names))


class _Statements(cst.CSTVisitor):
    """Every statement, in source order (a compound statement before those it holds)."""

    def __init__(self) -> None:
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseStatement):
            self.found.append(node)
        return True


class _Without(cst.CSTTransformer):
    def __init__(self, statement: cst.CSTNode) -> None:
        self.statement = statement

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[no-untyped-def]
        if original is self.statement:
            return cst.RemoveFromParent()
        if isinstance(updated, cst.IndentedBlock) and not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated


def _statements(module: cst.Module) -> list[cst.CSTNode]:
    visitor = _Statements()
    module.visit(visitor)
    return visitor.found


def shrink(code: str, still_fails: Callable[[str], bool], passes: int = 2) -> str:
    """``code`` with every statement removed whose removal keeps ``still_fails`` true. Outer
    statements are tried first, so an unneeded method goes in one try, not one per line."""
    module = cst.parse_module(code)
    for _ in range(passes):
        changed, index = False, 0
        while index < len(statements := _statements(module)):
            try:
                candidate = module.visit(_Without(statements[index]))
            except Exception:  # noqa: BLE001 - a removal libcst cannot express: keep the statement
                candidate = module
            if candidate.code != module.code and still_fails(candidate.code):
                module, changed = candidate, True  # the next statement now has this index
            else:
                index += 1
        if not changed:
            break
    return module.code
