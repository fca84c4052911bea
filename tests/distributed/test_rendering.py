"""A merged report, as the terminal and report.html show it: the per-rank table."""

from __future__ import annotations

import json

from rich.console import Console

from graphlint.tracer.report.html import render_html
from graphlint.tracer.report.text import print_report
from tests.distributed.conftest import SAMPLES

SLEEPS = SAMPLES / "rank_sleeps.py"


def test_the_terminal_report_has_a_row_per_rank_with_where_it_ended(distributed_run) -> None:
    _, report = distributed_run(SLEEPS, 2, "--timeout", "10")
    console = Console(record=True, width=240, color_system=None)
    print_report(report, console)
    text = console.export_text()
    assert "2 ranks" in text
    rows = [line for line in text.splitlines() if "in eager at samples/distributed/rank_sleeps.py" in line]
    assert len(rows) == 2 and "in all_reduce" in rows[0] and "in all_reduce" not in rows[1]
    assert "GD005 rank-hang on rank 1" in text


def test_report_html_has_the_rank_table(distributed_run) -> None:
    _, report = distributed_run(SLEEPS, 2, "--timeout", "10")
    html = render_html(report)
    table = html[html.index("<h2>Ranks</h2>") : html.index("<h2 id=failures>")]
    assert table.count("<tr>") == 3  # the header and one row per rank
    assert table.count("<td class='failed'>failed</td>") == 2  # eager failed on both ranks


def test_dump_writes_the_merged_report_and_each_ranks_own(distributed_run, tmp_path_factory) -> None:
    dump = tmp_path_factory.mktemp("dump")
    _, report = distributed_run(SAMPLES / "version_skew.py", 2, "--timeout", "120", "--dump", str(dump))
    assert json.loads((dump / "report.json").read_text()) == report
    assert "<h2>Ranks</h2>" in (dump / "report.html").read_text()
    for rank in (0, 1):
        own = json.loads((dump / f"rank-{rank}" / "report.json").read_text())
        assert own["rank"]["rank"] == rank and own["stages"] == report["ranks"][rank]["stages"]
