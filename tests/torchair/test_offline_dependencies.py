"""`pip install 'graphlint[trace]'` brings everything the offline torchair stage imports: every
third-party module that importing torchair offline loads belongs to a distribution that the
trace extra requires, directly or through its requirements. (numpy was missing once: torch does
not require it, and without it the stage silently fell back to offline-static.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path

from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
from pathlib import Path
from importlib.metadata import packages_distributions
from graphlint.tracer.torchair.locate import source_at
from graphlint.tracer.torchair.offline import offline_torchair

before = set(sys.modules)
with offline_torchair(source_at(Path(sys.argv[1]))):
    loaded = {name.split(".")[0] for name in set(sys.modules) - before}
owners = packages_distributions()
print(json.dumps(sorted({dist for name in loaded for dist in owners.get(name, [])})))
"""


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def _closure(names: list[str]) -> set[str]:
    """The distributions ``names`` need, transitively, as installed here (extras not followed)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            wanted = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in wanted:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(_name(line))
    return seen


def test_the_trace_extra_brings_what_offline_torchair_imports(torch_npu_wheel: Path) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [_name(r) for r in (*project["dependencies"], *project["optional-dependencies"]["trace"])]
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(torch_npu_wheel)], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    imported = {re.sub(r"[-_.]+", "-", d).lower() for d in json.loads(run.stdout.splitlines()[-1])}
    assert {"torch", "numpy", "protobuf"} <= imported  # the probe sees what torchair pulls in
    missing = imported - _closure(declared) - {"graphlint"}
    assert not missing, f"torchair imports {sorted(missing)} offline, which graphlint[trace] does not bring"
