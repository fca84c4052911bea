"""The knowledge base: known failure signatures → a hint (what it means, what to do) and refs.

The signatures are data, in ``signatures.toml`` beside this file (read it to see what graphlint
knows; add to it to teach it more). ``match_hint`` finds the first signature a finding matches.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphlint.tomlfile import read_toml
from graphlint.tracer.findings import Finding

SIGNATURES_FILE = Path(__file__).with_name("signatures.toml")
LANGUAGES = ("en", "zh")


@dataclass(frozen=True)
class Signature:
    id: str
    layer: str
    refs: tuple[str, ...]
    hint: dict[str, str]
    codes: frozenset[str] = frozenset()
    breaks: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    layers: frozenset[str] = frozenset()
    exceptions: frozenset[str] = frozenset()
    message: re.Pattern[str] | None = None
    file: re.Pattern[str] | None = None

    def matches(self, finding: Finding) -> bool:
        details = finding.details or {}
        text = "\n".join(str(t) for t in (finding.message, details.get("reason", "")) if t)
        checks = (
            not self.codes or finding.code in self.codes,
            not self.breaks or details.get("meaning") in self.breaks,
            not self.kinds or finding.kind in self.kinds,
            not self.layers or finding.layer in self.layers,
            not self.exceptions or details.get("exception") in self.exceptions,
            self.message is None or bool(self.message.search(text)),
            self.file is None or bool(finding.file and self.file.search(finding.file)),
        )
        return all(checks)


@functools.cache
def load_signatures(path: Path = SIGNATURES_FILE) -> tuple[Signature, ...]:
    data = read_toml(path)
    return tuple(_signature(entry) for entry in data.get("signature", []))


def _signature(entry: dict[str, Any]) -> Signature:
    match = entry.get("match", {})
    pattern = match.get("message")
    file_pattern = match.get("file")
    return Signature(
        id=entry["id"],
        layer=entry["layer"],
        refs=tuple(entry.get("refs", ())),
        hint=dict(entry["hint"]),
        codes=frozenset(match.get("codes", ())),
        breaks=frozenset(match.get("breaks", ())),
        kinds=frozenset(match.get("kinds", ())),
        layers=frozenset(match.get("layers", ())),
        exceptions=frozenset(match.get("exception", ())),
        message=re.compile(pattern, re.IGNORECASE) if pattern else None,
        file=re.compile(file_pattern) if file_pattern else None,
    )


def match_hint(finding: Finding, signatures: tuple[Signature, ...] | None = None) -> Signature | None:
    """The first known signature ``finding`` matches, or None."""
    for signature in signatures if signatures is not None else load_signatures():
        if signature.matches(finding):
            return signature
    return None


def annotate(finding: Finding, lang: str = "en") -> Finding:
    """Give ``finding`` the hint and refs of the signature it matches (a hint it already has
    from its stage is kept); refs are merged. Returns the same finding."""
    signature = match_hint(finding)
    if signature is not None:
        if not finding.hint:
            finding.hint = signature.hint.get(lang) or signature.hint["en"]
        finding.refs = list(dict.fromkeys([*finding.refs, *signature.refs]))
        finding.details = {**finding.details, "signature": signature.id}
    return finding
