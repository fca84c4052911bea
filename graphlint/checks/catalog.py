"""What the engine needs to know of each rule to judge a candidate, without importing the rules.

Rule modules import libcst, which only the walk over a parsed file needs; importing it is 0.17 s,
most of what a run served entirely from the facts cache would otherwise cost. Judging a cached
candidate needs only the rule's code, slug, severity in each kind of region, the regions it
applies in and whether only traced code counts. That table is built from the rule classes and
cached as JSON beside the facts, under the same fingerprint (which covers the rules' sources, so
a changed rule rebuilds it). A missing, corrupted or incomplete table is rebuilt from the rules.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphlint.checks.cache import FactsCache

if TYPE_CHECKING:
    from graphlint.checks.rules.base import ProjectRule, Rule

TABLE_NAME = "rules"
_NO_REGION = ""  # the key of the severity outside every region (rules reported anywhere)
_REGION_KINDS = ("compiled", "capture")
_FULLGRAPH = "/fullgraph"  # suffix of the key for a region whose entry asks fullgraph=True


def _severity_key(region: str | None, fullgraph: bool) -> str:
    return (region or _NO_REGION) + (_FULLGRAPH if fullgraph else "")


_SEVERITY_KEYS = frozenset(_severity_key(k, f) for k in (None, *_REGION_KINDS) for f in (False, True))


@dataclass(frozen=True)
class RuleInfo:
    code: str
    slug: str
    severities: Mapping[str, str]  # region kind ("" for none), "/fullgraph" when asked → severity
    regions: frozenset[str]
    traced_only: bool
    module: str  # where the rule class is
    judges_project: bool  # a ``ProjectRule``: run on the linked project, so its module is imported
    predicts: tuple[str, ...] = ()  # the GB codes of the construct (``Rule.predicts``)

    def severity(self, region: str | None, fullgraph: bool = False) -> str:
        return self.severities[_severity_key(region, fullgraph)]

    @classmethod
    def of(cls, rule: Rule) -> RuleInfo:
        from graphlint.checks.rules.base import ProjectRule

        kinds: tuple[Any, ...] = (None, *_REGION_KINDS)
        return cls(
            code=rule.code,
            slug=rule.slug,
            severities={
                _severity_key(kind, fullgraph): rule.severity(kind, fullgraph=fullgraph)
                for kind in kinds
                for fullgraph in (False, True)
            },
            regions=frozenset(rule.regions),
            traced_only=rule.traced_only,
            module=type(rule).__module__,
            judges_project=isinstance(rule, ProjectRule),
            predicts=tuple(rule.predicts),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "severities": dict(self.severities),
            "regions": sorted(self.regions),
            "traced_only": self.traced_only,
            "module": self.module,
            "judges_project": self.judges_project,
            "predicts": list(self.predicts),
        }

    @classmethod
    def from_json(cls, code: str, data: dict[str, Any]) -> RuleInfo:
        severities = {str(k): str(v) for k, v in data["severities"].items()}
        flags = (data["traced_only"], data["judges_project"])
        predicts = tuple(map(str, data["predicts"]))
        if set(severities) != _SEVERITY_KEYS or not all(isinstance(f, bool) for f in flags):
            raise ValueError("incomplete rule entry")
        return cls(code, str(data["slug"]), severities, frozenset(map(str, data["regions"])), data["traced_only"],
                   str(data["module"]), data["judges_project"], predicts)


class Catalog:
    """Rule code → ``RuleInfo``: from the cached table when it is there, else from the rules."""

    def __init__(self, cache: FactsCache | None) -> None:
        self._cache = cache
        self._table = _read(cache) if cache is not None else None
        self._rebuilt = False
        self._project_rules: list[ProjectRule] | None = None

    def __getitem__(self, code: str) -> RuleInfo:
        if self._table is None or (code not in self._table and not self._rebuilt):
            self._rebuild()
        assert self._table is not None
        return self._table[code]  # a code no rule has, after a rebuild, is a bug: KeyError

    def codes(self) -> list[str]:
        """Every rule's code."""
        if self._table is None:
            self._rebuild()
        assert self._table is not None
        return list(self._table)

    def project_rules(self) -> list[ProjectRule]:
        """The rules that judge the linked project itself, imported from their own modules only."""
        if self._project_rules is None:
            if self._table is None:
                self._rebuild()
            assert self._table is not None
            wanted = {info.code for info in self._table.values() if info.judges_project}
            modules = {info.module for info in self._table.values() if info.judges_project}
            found = [rule for module in sorted(modules) for rule in _rules_in(module) if rule.code in wanted]
            if {rule.code for rule in found} != wanted and not self._rebuilt:
                self._rebuild()  # a stale table: start again from the rules
                return self.project_rules()
            self._project_rules = found
        return self._project_rules

    def _rebuild(self) -> None:
        self._table = _from_rules()
        self._rebuilt = True
        self._project_rules = None
        if self._cache is not None:
            self._cache.put_table(TABLE_NAME, {code: info.to_json() for code, info in self._table.items()})


def _rules_in(module_name: str) -> list[ProjectRule]:
    from graphlint.checks.rules.base import ProjectRule

    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return []
    return [
        value() for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, ProjectRule) and "code" in vars(value)
        and value.__module__ == module_name
    ]


def _from_rules() -> dict[str, RuleInfo]:
    from graphlint.checks.rules import all_rules

    return {rule.code: RuleInfo.of(rule) for rule in all_rules()}


def _read(cache: FactsCache) -> dict[str, RuleInfo] | None:
    data = cache.get_table(TABLE_NAME)
    try:
        return {str(code): RuleInfo.from_json(str(code), entry) for code, entry in data.items()}
    except (TypeError, ValueError, KeyError, AttributeError):
        return None  # missing or corrupted: rebuilt from the rules when first needed
