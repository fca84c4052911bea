"""Put a repro file together: what it reproduces, the versions it was made with, the layer's
code, and the check that turns what it sees into the exit status (``signature.finish``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphlint.tracer.repro.signature import Signature

HEADER = '''"""graphlint repro, {layer} layer: {what}.

Reproduces: {expected}
Made from {target} ({finding}) with {versions}.
Exit status: 1 while the failure is there, 0 once it is gone, 2 on another failure.
Needs torch and graphlint (`pip install graphlint[trace]`), no file of the project.{note}
"""
'''


@dataclass
class ReproParts:
    """What a layer's module makes: the rest is the same for every layer."""

    layer: str
    what: str  # "torchair translation of graph_0 (post-AOT FX graph)"
    expected: Signature | None  # None: made from a layer that passed
    imports: list[str]
    body: str  # definitions and inputs
    check: str  # statements that bind ``observed`` (a Signature or None)
    note: str = ""


def render(parts: ReproParts, report: dict[str, Any], failure: dict[str, Any] | None) -> str:
    import graphlint

    env = report.get("environment") or {}
    versions = ", ".join(
        f"{name} {env[name]}" for name in ("python", "torch", "torch_npu", "torchair", "transformers") if env.get(name)
    )
    where = "the layer passed"
    if failure:
        place = f"at {failure['file']}:{failure.get('line')}" if failure.get("file") else f"in the {failure.get('stage')} stage"
        where = f"{failure.get('code') or failure.get('kind')} {place}"
    header = HEADER.format(
        layer=parts.layer,
        what=parts.what,
        expected=parts.expected or "nothing (the layer passed when this was made): any failure of the layer",
        target=report.get("target"),
        finding=where,
        versions=f"graphlint {graphlint.__version__}, {versions}",
        note=f"\n{parts.note}" if parts.note else "",
    )
    expected = parts.expected.to_json() if parts.expected else None
    check = "\n".join(f"        {line}" for line in parts.check.splitlines())
    main = (
        f"EXPECTED = {expected!r}\n\n"
        'if __name__ == "__main__":\n'
        "    from graphlint.tracer.repro.signature import cannot_run, finish\n\n"
        "    try:\n"
        f"{check}\n"
        "    except Exception as exc:  # the repro itself cannot run here: that is no reproduction\n"
        "        sys.exit(cannot_run(exc))\n"
        "    sys.exit(finish(EXPECTED, observed))\n"
    )
    return "\n".join([header, "import sys", *parts.imports, "", parts.body.strip("\n"), "", "", main])
