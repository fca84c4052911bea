"""The environment facts every trace report embeds and ``graphlint env`` prints, and the two
version traps seen on Ascend machines: torch and torch_npu releases that do not pair (torch_npu
X.Y.* needs torch X.Y.*), and torch_npu installed without CANN (``import torch`` then fails
unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``, and ``import transformers`` fails even then, since
transformers imports torch_npu when it is installed). torch_npu is never imported here."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

from graphlint.tracer.torchair.locate import cann_present, locate_torch_npu

_CANN_HOME_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
_CANN_DEFAULT_HOME = Path("/usr/local/Ascend/ascend-toolkit/latest")
_CANN_VERSION_FILES = ("version.cfg", "*/ascend_toolkit_install.info", "compiler/version.info", "runtime/version.info")
_VERSION_LINE = re.compile(r"^(?:toolkit_installed_version|version|Version)\s*=\s*\[?(?:[\w-]+:)?(?P<v>[\w.\-]+)", re.MULTILINE)
_RELEASE = re.compile(r"^(\d+)\.(\d+)")
# The torch release lines graphlint's tracer is run on (`make test-matrix`, docs/versions.md):
# the oldest and the newest. Which behaviour differs between them is feature-detected where it
# lives; this range only says what graphlint vouches for.
TESTED_TORCH_LINES = ((2, 6), (2, 14))


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cann_version() -> str | None:
    """CANN's version from the toolkit's version file, when a toolkit is present."""
    homes = [Path(os.environ[v]) for v in _CANN_HOME_VARIABLES if os.environ.get(v)] + [_CANN_DEFAULT_HOME]
    for home in homes:
        for pattern in _CANN_VERSION_FILES:
            for path in sorted(home.glob(pattern)):
                try:
                    match = _VERSION_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
                except OSError:  # unreadable: look at the next file
                    continue
                if match:
                    return match["v"]
    return None


def device_kind() -> str:
    """``npu`` when torch_npu and CANN are both present, ``cuda`` when torch (already imported)
    sees a GPU, else ``cpu``. Does not import torch_npu (nor torch, when not yet imported)."""
    if importlib.util.find_spec("torch_npu") is not None and cann_present():
        return "npu"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def environment_facts(torchair_path: str | None = None) -> dict[str, Any]:
    """The facts every report embeds; ``torchair_path`` is ``--torchair``, when given."""
    torch_npu = package_version("torch_npu") if importlib.util.find_spec("torch_npu") is not None else None
    try:
        source = locate_torch_npu(torchair_path)
    except FileNotFoundError:  # a bad --torchair: the torchair stage reports it
        source = None
    if source is None:
        torchair = None
    elif source.kind == "installed":
        torchair = f"installed {source.version}"
    else:
        torchair = f"offline {source.version}"
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": package_version("torch"),
        "torch_npu": torch_npu,
        "cann": cann_version(),
        "torchair": torchair,
        "transformers": package_version("transformers"),
        "depyf": package_version("depyf"),
        "device": device_kind(),
        "platform": platform.platform(),
    }
    facts["pairing"] = pairing(facts, source.version if source is not None else None)
    facts["warnings"] = version_warnings(facts)
    return facts


def pairing(facts: dict[str, Any], torchair_version: str | None = None) -> str:
    """One line: the torch / torch_npu / CANN combination and whether graphlint supports it.
    ``torchair_version`` is the torch_npu whose torchair graphlint runs (installed or offline)."""
    torch = facts.get("torch")
    torch_npu = facts.get("torch_npu") or torchair_version
    cann = facts.get("cann")
    named = (
        f"torch {torch or '-'} · torch_npu {torch_npu or '-'}"
        f"{'' if facts.get('torch_npu') or not torch_npu else ' (offline)'} · CANN {cann or '-'}"
    )
    line, (oldest, newest) = _release(torch or ""), TESTED_TORCH_LINES
    tested = f"graphlint is tested on torch {'.'.join(map(str, oldest))} to {'.'.join(map(str, newest))}"
    if line is None:
        return f"{named}: not supported (no torch installed; the tracer needs torch)"
    if not oldest <= line <= newest:
        return f"{named}: not supported ({tested})"
    if torch_npu and _release(torch_npu) != line:
        return f"{named}: not supported (torch_npu {torch_npu} is built for another torch release line)"
    cann_note = "" if cann else "; without CANN, torchair and capture run offline"
    return f"{named}: supported ({tested}{cann_note})"


def version_warnings(facts: dict[str, Any]) -> list[str]:
    warnings = []
    torch, torch_npu = facts.get("torch"), facts.get("torch_npu")
    if torch and torch_npu and _release(torch) != _release(torch_npu):
        warnings.append(
            f"torch {torch} and torch_npu {torch_npu} do not pair: torch_npu X.Y.* needs torch X.Y.*; "
            f"install torch {'.'.join(map(str, _release(torch_npu) or ()))}.* or the torch_npu of your torch."
        )
    if torch_npu and not facts.get("cann") and not cann_present():
        warnings.append(
            f"torch_npu {torch_npu} is installed but CANN is not: `import torch` fails unless "
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0 is set, and `import transformers` fails even then "
            "(transformers imports torch_npu when it is installed). Install CANN and `source "
            "set_env.sh`, or uninstall torch_npu on this machine."
        )
    return warnings


def _release(version: str) -> tuple[int, int] | None:
    m = _RELEASE.match(version)
    return (int(m[1]), int(m[2])) if m else None


def format_environment(facts: dict[str, Any]) -> str:
    """The facts as aligned ``name: value`` lines, then the warnings."""
    lines = [f"{key:<13}{value if value is not None else '-'}" for key, value in facts.items() if key != "warnings"]
    lines += [f"warning: {w}" for w in facts.get("warnings", [])]
    return "\n".join(lines)
