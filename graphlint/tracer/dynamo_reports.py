"""Collect what dynamo reports while it compiles: graph breaks, recompiles, recompile-limit hits.

Dynamo writes these on its logging artifacts ``graph_breaks`` and ``recompiles`` (enabled with
``torch._logging.set_logs``) and as a ``torch._dynamo.convert_frame`` warning; a handler keeps
the messages for the classifiers in ``graphlint.tracer.classify``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from graphlint.tracer.classify.recompile import is_limit_hit

_DYNAMO_LOGGER = "torch._dynamo"


@dataclass
class DynamoReports:
    graph_breaks: list[str] = field(default_factory=list)
    recompiles: list[str] = field(default_factory=list)
    limit_hits: list[str] = field(default_factory=list)


class _Collector(logging.Handler):
    def __init__(self, reports: DynamoReports) -> None:
        super().__init__(level=logging.DEBUG)
        self.reports = reports

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.name.endswith("__graph_breaks"):
            self.reports.graph_breaks.append(message)
        elif record.name.endswith("__recompiles"):
            self.reports.recompiles.append(message)
        elif is_limit_hit(message):
            self.reports.limit_hits.append(message)


@contextmanager
def collect_dynamo_reports() -> Iterator[DynamoReports]:
    import torch._logging

    reports = DynamoReports()
    handler = _Collector(reports)
    logger = logging.getLogger(_DYNAMO_LOGGER)
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    logger.addHandler(handler)
    try:
        yield reports
    finally:
        logger.removeHandler(handler)
        torch._logging.set_logs()
