"""Which findings a run keeps: ``--select`` / ``--ignore``, ``[tool.graphlint]`` select, ignore
and per-file-ignores, and ``# graphlint: ignore[...]`` comments, all by code prefix. A code that
names nothing graphlint check prints is a usage error before any file is parsed."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import Path

from graphlint.checks.findings import PARSE_ERROR, Finding
from graphlint.checks.link import LinkedFile
from graphlint.codes import check_codes
from graphlint.config import Config, ConfigError


def selectable_codes(rule_codes: Iterable[str] | None = None) -> tuple[str, ...]:
    """Every code `graphlint check` can print: its rules' (``rule_codes``, else every rule's)
    and its own (GL000)."""
    if rule_codes is None:
        from graphlint.checks.rules import all_rules

        rule_codes = [rule.code for rule in all_rules()]
    return tuple(sorted({*rule_codes} | check_codes()))


def _known_codes_only(where: str, codes: tuple[str, ...], known: tuple[str, ...]) -> None:
    unknown = [code for code in codes if not any(k.startswith(code.upper()) for k in known)]
    if unknown:
        raise ConfigError(
            f"{where}: {', '.join(unknown)} names no code graphlint check prints "
            f"(codes: {', '.join(known)}; prefixes like GL2 select a family)"
        )


class Selection:
    """--select/--ignore and [tool.graphlint] select/ignore/per-file-ignores, and
    ``# graphlint: ignore[...]`` comments; all by code prefix. ``select`` replaces the config's
    select when given; ``ignore`` adds to its ignore."""

    def __init__(
        self, config: Config, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (),
        rule_codes: Iterable[str] | None = None,
    ) -> None:
        """Raises ``ConfigError`` for a code or prefix that names no code check can print;
        ``rule_codes``: the rules' codes (the catalog's), else every rule's."""
        given = (
            ("--select", select), ("--ignore", ignore),
            ("[tool.graphlint] select", config.select), ("[tool.graphlint] ignore", config.ignore),
            *((f"[tool.graphlint] per-file-ignores {glob!r}", codes) for glob, codes in config.per_file_ignores.items()),
        )
        if any(codes for _, codes in given):  # nothing to check costs nothing
            known = selectable_codes(rule_codes)
            for where, codes in given:
                _known_codes_only(where, codes, known)
        self.select = tuple(code.upper() for code in (select or config.select))
        self.ignore = tuple(code.upper() for code in (*config.ignore, *ignore))
        self.per_file = config.per_file_ignores

    def keep(self, linked: LinkedFile, findings: list[Finding], root: Path) -> list[Finding]:
        ignored_here = self._per_file(linked.path, root)
        suppressions = linked.facts.suppressions
        kept = []
        for finding in findings:
            code = finding.code
            if self.select and not code.startswith(self.select) and code != PARSE_ERROR:
                continue
            if code.startswith(self.ignore) or code.startswith(ignored_here):
                continue
            codes = suppressions.get(finding.line)
            if codes is not None and (not codes or code.startswith(tuple(codes))):
                continue
            kept.append(finding)
        return kept

    def _per_file(self, path: Path, root: Path) -> tuple[str, ...]:
        if not self.per_file:
            return ()
        try:
            relative = path.resolve().relative_to(root).as_posix()
        except ValueError:
            relative = path.as_posix()
        return tuple(
            code.upper()
            for pattern, codes in self.per_file.items()
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern)
            for code in codes
        )
