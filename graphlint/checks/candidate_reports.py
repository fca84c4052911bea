"""What rules report during the walk (``SiteContext.report``), made ``Candidate`` facts once
the file's positions are known (``positions.locate``, by anchor kind and ordinal)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from graphlint.checks.facts import Candidate
from graphlint.checks.positions import ANCHOR_KINDS
from graphlint.checks.rules.base import Rule


@dataclass
class Report:
    rule: Rule
    node: cst.CSTNode
    message: str
    scope: str
    fix: bool
    eager: bool
    uncaptured: bool
    modes: list[str] | None
    after: int
    block: int | None
    anywhere: bool
    entry_scope_only: bool
    own_entry: int | None
    predicts: tuple[str, ...] = ()
    host_receiver: bool = False
    inherited_state: list[str] | None = None
    built_state: list[str] | None = None
    receiver_parameter: str | None = None
    device_calls: list[list[list[Any]]] | None = None


class CandidateReports:
    """The extractor's part that takes the rules' reports (a mixin: the walk keeps the scope,
    the eager branches and the capture block each report is made in)."""

    reports: list[Report]
    eager_nodes: set[int]
    function_scope: Any
    eager: bool
    uncaptured: bool
    after: int
    block: int | None
    point_modes: Callable[[], list[str] | None]  # returning_calls.py
    ordinals: dict[int, tuple[str, int]]  # id(node) → (anchor kind, ordinal)

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: bool = False,
        anywhere: bool = False,
        entry_scope_only: bool = False,
        own_entry: int | None = None,
        predicts: tuple[str, ...] = (),
        host_receiver: bool = False,
        inherited_state: list[str] | None = None,
        built_state: list[str] | None = None,
        untraced: bool = False,
        void_in_capture: bool = False,
        receiver_parameter: str | None = None,
        device_calls: list[list[list[Any]]] | None = None,
    ) -> None:
        if type(node) not in ANCHOR_KINDS:
            raise TypeError(f"{rule.code} reports a {type(node).__name__}; report one of {list(ANCHOR_KINDS)}")
        self.reports.append(
            Report(
                rule=rule,
                node=node,
                message=message or rule.message,
                scope=self.function_scope.qualname,
                fix=fix,
                eager=self.eager or untraced,
                uncaptured=self.uncaptured or void_in_capture,  # no capture finding, as in code none runs
                modes=self.point_modes(),
                after=self.after,
                block=self.block,
                anywhere=anywhere,
                entry_scope_only=entry_scope_only,
                own_entry=own_entry,
                predicts=predicts,
                host_receiver=host_receiver,
                inherited_state=inherited_state,
                built_state=built_state,
                receiver_parameter=receiver_parameter,
                device_calls=device_calls,
            )
        )

    def _call_ordinals(self, device_calls: list[list[list[Any]]] | None) -> list[list[list[Any]]] | None:
        """``device_calls`` with each call's ordinal for the node a rule had (every call now has one)."""
        if device_calls is None:
            return None
        return [
            [[self.ordinals[id(call)][1] if isinstance(call, cst.Call) else call, keys] for call, keys in way]
            for way in device_calls
        ]

    def candidates(self, anchors: list[tuple[str, int, cst.CSTNode]], spans: dict[tuple[str, int], Any]) -> list[Candidate]:
        """The reports as candidates, ``anchors`` being each report's (kind, ordinal, node)."""
        found: list[Candidate] = []
        for report, (kind, ordinal, _) in zip(self.reports, anchors):
            span = spans[kind, ordinal]
            found.append(
                Candidate(
                    code=report.rule.code,
                    scope=report.scope,
                    line=span.line,
                    column=span.column,
                    end_line=span.end_line,
                    end_column=span.end_column,
                    message=report.message,
                    anchor=(kind, ordinal),
                    fix=report.rule.fix_safety if report.fix else None,
                    eager=report.eager or id(report.node) in self.eager_nodes,
                    uncaptured=report.uncaptured,
                    modes=report.modes,
                    after=report.after,
                    block=report.block,
                    anywhere=report.anywhere,
                    entry_scope_only=report.entry_scope_only,
                    own_entry=report.own_entry,
                    predicts=list(report.predicts),
                    host_receiver=report.host_receiver,
                    inherited_state=report.inherited_state,
                    built_state=report.built_state,
                    receiver_parameter=report.receiver_parameter,
                    device_calls=self._call_ordinals(report.device_calls),
                )
            )
        return found
