"""``# graphlint: ignore[GL201, GL202]`` (or bare ``# graphlint: ignore``) comments, by line."""

from __future__ import annotations

import io
import re
import tokenize

_SUPPRESSION = re.compile(r"#\s*graphlint:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s-]*)\])?")


def suppressions(text: str) -> dict[int, list[str]]:
    """``# graphlint: ignore[GL201, GL202]`` (or bare) comments, by line."""
    if "graphlint:" not in text:
        return {}
    found: dict[int, list[str]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return {}
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = _SUPPRESSION.search(token.string)
        if match:
            codes = match["codes"]
            found[token.start[0]] = [c.strip().upper() for c in codes.split(",") if c.strip()] if codes else []
    return found
