"""The value-flow solve extended in place against a full solve, in-process. Run on purpose, never in CI.

    python benchmarks/extend_solve.py              # 200 copies of the test project (1,000 files)
    python benchmarks/extend_solve.py --copies 50

``incremental_solve.py`` extends a kept solve only where the solve hit no bound, which real trees
do (transformers' ``models/``, vllm-ascend: docs/editors.md). So this measures the mechanism on
a project that hits none: ``--copies`` packages in the shape of ``tests/checks/
test_incremental_solve.py``'s (a package star-importing its modules, helpers, layers, a model,
a compile entry), each edit appending one call to a compiled ``forward`` that runs an existing
method (``self.block.norm(x)``). Prints the full solve's CPU seconds, then each extension's, and
checks the first against a full solve of the edited project.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphlint.checks.incremental_solve import LiveSolve  # noqa: E402
from graphlint.checks.valueflow import solve  # noqa: E402
from tests.checks.test_incremental_solve import BASE, canonical, linked  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=200, help="packages of 5 files each (default 200)")
    parser.add_argument("--edits", type=int, default=5, help="edits, each in another package (default 5)")
    args = parser.parse_args(argv)
    sources = {
        path.replace("app/", f"app{k}/"): text.replace("app.", f"app{k}.").replace("from app import", f"from app{k} import")
        for k in range(args.copies) for path, text in BASE.items()
    }
    files = linked(sources)
    started = time.process_time()
    solve(files)
    full = time.process_time() - started
    started = time.process_time()
    live = LiveSolve(files, {}, {}, False)
    kept = time.process_time() - started
    assert live.solver is not None, "the solve hit a bound: nothing to extend"
    print(f"{args.copies} copies, {len(files)} files, {len(live.solver.values):,} nodes: full solve {full:.2f} CPU-s, "
          f"kept {kept:.2f} CPU-s; load average {os.getloadavg()[0]:.1f}")
    spent = []
    for edit in range(1, args.edits + 1):
        sources[f"app{edit}/model.py"] += f"        w{edit} = self.block.norm(x)\n"
        edited = linked(sources)
        started = time.process_time()
        answer = live.extend(edited, {}, {}, False)
        spent.append(time.process_time() - started)
        assert not isinstance(answer, str), answer
        if edit == 1:
            assert canonical(answer) == canonical(solve(edited)), "the extension differs from a full solve"
    print(f"extended {len(spent)} times: {', '.join(f'{s * 1000:.0f}' for s in spent)} CPU-ms, median "
          f"{statistics.median(spent) * 1000:.0f}; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
