"""A project kept in memory between checks, for callers that check again and again (``graphlint
server``): the stable interface between an editor and the checker.

``CheckSession(root).check(targets, unsaved)`` gives what ``graphlint check`` would report for
``targets`` if the files of ``unsaved`` held that text, with every file of the project linked.
The facts of each file are kept in memory: a file on disk is read again only when its size or
modification time changed (then from the facts cache when its content is known), an unsaved
text is walked only when it is new. The call graph is solved again only when the files' flow
facts changed (``graph_cache.py``); the regions and the judging run every time. What the
project's naming takes from each file's imports, its linked file and its part of the solve key
are kept by its facts (never changed once made): an edit takes them again for the edited file.

The facts cache is read and filled for files on disk, never for unsaved text: an editor changes
a buffer at every key stroke, and none of those texts needs to outlive the session.
"""

from __future__ import annotations

import io
import os
import time
import tokenize
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from graphlint.checks.cache import FactsCache, content_key
from graphlint.checks.catalog import Catalog
from graphlint.checks.collect import collect_facts
from graphlint.checks.discover import discover, is_excluded
from graphlint.checks.selection import Selection
from graphlint.checks.engine import CheckResult, cache_dir, extract_options_of, judge, module_names
from graphlint.checks.facts import FileFacts
from graphlint.checks.graph_cache import SolvedGraphs
from graphlint.checks.link import LinkedFiles
from graphlint.checks.modules import ImportedHeads, ModuleNames
from graphlint.checks.presets import framework_presets, knowledge
from graphlint.config import Config, Knowledge, load_config

if TYPE_CHECKING:
    from graphlint.checks.reparse import StatementParser

_UNSAVED_KEPT = 64  # facts of recent unsaved texts, by content: undo and redo walk nothing


@dataclass(frozen=True)
class _Stamp:
    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> _Stamp | None:
        try:
            status = os.stat(path)
        except OSError:
            return None
        return cls(status.st_size, status.st_mtime_ns, status.st_ino)


class CheckSession:
    """One project (the directory of its ``pyproject.toml`` or ``.git``) kept in memory.

    ``select`` / ``ignore`` are the command line's (added to ``[tool.graphlint]`` as in
    ``graphlint check``); ``jobs`` the processes that parse files not yet in the cache.
    ``stat_interval``: seconds during which files on disk are taken as unchanged (``refresh``
    ends it early); 0 looks at every file at every check. An editor passes a few seconds: it
    says itself when it saves, and a check at every key stroke need not stat the whole tree."""

    def __init__(
        self,
        root: Path,
        *,
        select: tuple[str, ...] = (),
        ignore: tuple[str, ...] = (),
        use_cache: bool = True,
        cache_directory: Path | None = None,
        jobs: int = 0,
        stat_interval: float = 0.0,
    ) -> None:
        self.root = root.resolve()
        self._stat_interval = stat_interval
        self._stated_at = float("-inf")
        self._select, self._ignore = select, ignore
        self._use_cache, self._cache_directory = use_cache, cache_directory
        self._jobs = jobs or os.cpu_count() or 1
        self._config_stamp: _Stamp | None = None
        self._config: Config | None = None
        self._files: list[Path] | None = None
        self._on_disk: dict[Path, tuple[_Stamp, FileFacts]] = {}
        self._unsaved: OrderedDict[str, FileFacts] = OrderedDict()
        self._open: dict[Path, tuple[str, FileFacts]] = {}  # each unsaved file's last text: unchanged, it is not hashed again
        self._displays: dict[Path, str] = {}
        self._catalog: Catalog | None = None
        self._names: ModuleNames | None = None  # module names found so far (the files' places don't change)
        self._heads = ImportedHeads()  # what each file's imports add to the naming, by its facts
        self._linked = LinkedFiles()  # each file linked, by its facts and the naming
        self._graphs: SolvedGraphs | None = None  # solved call graphs: an edit that changes no flow solves nothing
        self._presets: list[str] = []
        self._held: dict[str, str] = {}  # frameworks whose own capture blocks are not analysed
        self._known: Knowledge | None = None  # the project's knowledge and its presets'
        self._parser: StatementParser | None = None  # parses unsaved texts, reusing their statements

    @property
    def config(self) -> Config:
        """``[tool.graphlint]``, read again when ``pyproject.toml`` changed. Raises ``ConfigError``."""
        stamp = _Stamp.of(self.root / "pyproject.toml")
        if self._config is None or stamp != self._config_stamp:
            config = load_config(self.root)
            if self._config is not None and config != self._config:
                self._forget_files()  # excludes or entry points changed: other files, other facts
            self._config, self._config_stamp = config, stamp
        return self._config

    def refresh(self) -> None:
        """Files were created, changed, deleted or moved: look at them again at the next check."""
        self._files = None
        self._stated_at = float("-inf")
        self._displays.clear()
        self._names = None

    def contains(self, path: Path) -> bool:
        """Whether ``path`` is a file this session checks (under the root, not excluded)."""
        path = path.resolve()
        return path.is_relative_to(self.root) and not is_excluded(path, self.root, self.config.exclude)

    def check(self, targets: Sequence[Path], unsaved: Mapping[Path, str] | None = None) -> CheckResult:
        """Findings in ``targets`` (paths under the root), the text of ``unsaved`` files standing
        in for what is on disk. Raises ``ConfigError`` for a malformed ``[tool.graphlint]``."""
        started = time.perf_counter()
        config = self.config
        unsaved = {path.resolve(): text for path, text in (unsaved or {}).items()}
        named = [t for t in dict.fromkeys(p.resolve() for p in targets) if self.contains(t)]
        if self._files is None:
            self._files = [p.resolve() for p in discover([self.root], self.root, config.exclude)]
            presets, self._held = framework_presets(config, self._files)
            known = knowledge(config, presets, self._held.values())
            if known != self._known:  # other entry points: other facts
                self._forget_facts()
            self._presets, self._known = presets, known
        assert self._known is not None
        # One order whatever the targets (the project's files, then unsaved files not on disk):
        # the solved graph is kept under it, and opening another document solves nothing.
        on_disk = set(self._files)
        order = [*self._files, *(t for t in named if t not in on_disk)]
        found = self._facts(order, unsaved, self._known)
        facts = {path: found[path] for path in order if path in found}
        if self._catalog is None:
            self._catalog = Catalog(self._cache(self._known))
        if self._graphs is None:
            self._graphs = SolvedGraphs(self._cache(self._known), incremental=True)
        self._graphs.write = not unsaved.keys() & facts.keys()
        named = [t for t in named if t in facts]  # neither on disk nor unsaved: nothing to check
        selection = Selection(config, self._select, self._ignore, self._catalog.codes())
        names = self._names = module_names(self.root, config, facts, kept=self._names, heads=self._heads)
        findings, internal = judge(
            named, facts, self.root, self._known, selection, self._catalog, names, display=self._display, graphs=self._graphs,
            preview=config.preview, held=self._held, linked_files=self._linked,
        )
        held = sorted(set(self._held.values()))
        elapsed = time.perf_counter() - started
        return CheckResult(findings, len(named), elapsed, internal, list(self._presets), None, config.platform, held)

    def solve_ahead(self, done: Callable[[], None]) -> None:
        """Solve the value flow of the project as last checked on another thread, for the next
        edit that changes it (``SolvedGraphs.solve_ahead``); ``done`` is called on that thread
        when the solve ends, and ``take_solved_ahead`` then takes it on this one."""
        if self._graphs is not None:
            self._graphs.solve_ahead(done)

    def take_solved_ahead(self) -> None:
        if self._graphs is not None:
            self._graphs.take_solved_ahead()

    def _facts(self, files: list[Path], unsaved: Mapping[Path, str], known: Knowledge) -> dict[Path, FileFacts]:
        facts: dict[Path, FileFacts] = {}
        changed: list[Path] = []
        stamps: dict[Path, _Stamp] = {}
        now = time.monotonic()
        look = now - self._stated_at >= self._stat_interval
        if look:
            self._stated_at = now
        for path in files:
            if path in unsaved:
                text = unsaved[path]
                kept_text = self._open.get(path)
                if kept_text is None or kept_text[0] != text:
                    kept_text = self._open[path] = (text, self._unsaved_facts(text, known))
                facts[path] = kept_text[1]
                continue
            kept = self._on_disk.get(path)
            if kept is not None and not look:
                facts[path] = kept[1]
                continue
            stamp = _Stamp.of(path)
            if stamp is None:  # deleted since the files were found
                continue
            if kept is not None and kept[0] == stamp:
                facts[path] = kept[1]
            else:
                changed.append(path)
                stamps[path] = stamp
        for path in [p for p in self._open if p not in unsaved]:  # closed or saved
            del self._open[path]
        if changed:
            loaded = collect_facts(changed, extract_options_of(known), self._cache(known), self._jobs)
            for path in changed:
                self._on_disk[path] = (stamps[path], loaded[path])
                facts[path] = loaded[path]
        return facts

    def _unsaved_facts(self, text: str, known: Knowledge) -> FileFacts:
        source = _encoded(text)
        key = content_key(source)
        found = self._unsaved.get(key)
        if found is None and (cache := self._cache(known)) is not None:
            found = cache.get(key)  # opened and not yet changed: the file's own entry
        if found is None:
            from graphlint.checks.extract import extract_facts
            from graphlint.checks.reparse import StatementParser

            if self._parser is None:
                self._parser = StatementParser()
            try:
                found = extract_facts(source, extract_options_of(known), parse=self._parser)
            except Exception as exc:  # a checker bug must not cost the other files' findings
                found = FileFacts(error=f"internal error: {type(exc).__name__}: {exc}", internal=True)
        self._unsaved[key] = found
        self._unsaved.move_to_end(key)
        while len(self._unsaved) > _UNSAVED_KEPT:
            self._unsaved.popitem(last=False)
        return found

    def _cache(self, known: Knowledge) -> FactsCache | None:
        if not self._use_cache:
            return None
        return FactsCache(cache_dir(self._cache_directory, self.root), extract_options_of(known))

    def _display(self, path: Path) -> str:
        """Reported paths are relative to the root (an editor's server has no meaningful
        working directory)."""
        display = self._displays.get(path)
        if display is None:
            display = self._displays[path] = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else path.as_posix()
        return display

    def _forget_files(self) -> None:
        self.refresh()
        self._forget_facts()

    def _forget_facts(self) -> None:
        self._on_disk.clear()
        self._unsaved.clear()
        self._open.clear()
        self._catalog = None
        self._graphs = None


def _encoded(text: str) -> bytes:
    """An editor's text as the file's bytes: in the encoding its PEP 263 line declares, if any."""
    source = text.encode("utf-8")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source if encoding in ("utf-8", "utf-8-sig") else text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeEncodeError):
        return source  # the walk reports what is wrong with the declaration
