"""What the graph-break rules (GL106–GL110) share: severity by region."""

from __future__ import annotations

from typing import ClassVar

from graphlint.checks.facts import RegionKind
from graphlint.checks.rules.base import Rule, Severity


class BreakRule(Rule):
    """A construct dynamo breaks the graph at. In a plain compiled region that costs speed (two
    graphs and a trip through Python between them): a warning. Where a break fails the compile
    (``fullgraph=True``) or the capture, it is an error."""

    # Whether the construct still breaks under fullgraph=True: torch 2.13 keeps .item() and its
    # kin in the graph there as unbacked symbols (dynamo.toml, value_read).
    breaks_fullgraph: ClassVar[bool] = True

    def severity(self, region: RegionKind | None, fullgraph: bool = False) -> Severity:
        if region == "capture" or (fullgraph and self.breaks_fullgraph):
            return "error"
        return "warning"
