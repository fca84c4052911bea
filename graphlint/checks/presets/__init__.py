"""Framework presets: what vLLM, vllm-ascend, sglang, … compile, capture and dispatch, as data.

One TOML file per framework in this directory (``vllm.toml``): the knowledge keys of
``[tool.graphlint]`` (``config.Knowledge``), plus ``summary``, ``detect`` (the top-level
modules whose import turns the preset on) and ``auto`` (false: only ``presets = [...]`` turns it
on, for a preset whose findings are not yet precise enough to show unasked: while it is held, only
what it knows of where code never runs applies, ``knowledge``). Knowledge in a
``[platforms.<name>]`` table holds only where ``<name>`` is the platform checked
(``[tool.graphlint] platform``, the NPU by default). This module is the one piece of code that
reads them.
A project gets the presets of the frameworks it imports, unless ``presets = [...]`` in
``[tool.graphlint]`` names the ones to use (``presets = []``: none).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from graphlint.checks.discover import read_source
from graphlint.config import Config, ConfigError, Knowledge, parse_knowledge, parse_platforms
from graphlint.tomlfile import read_toml


_HERE = Path(__file__).parent
_PRESET_KEYS = frozenset({"summary", "detect", "auto", "platforms"})


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    detect: tuple[str, ...]  # top-level modules; importing one enables the preset
    knowledge: Knowledge
    auto: bool = True  # whether importing the framework turns it on (else only `presets = [...]`)
    platforms: dict[str, Knowledge] = field(default_factory=dict)  # platform → knowledge true only there


@cache
def all_presets() -> dict[str, Preset]:
    presets = {}
    for path in sorted(_HERE.glob("*.toml")):
        table = read_toml(path)
        knowledge = parse_knowledge({k: v for k, v in table.items() if k not in _PRESET_KEYS}, str(path))
        presets[path.stem] = Preset(
            path.stem, table.get("summary", ""), tuple(table.get("detect", ())), knowledge, bool(table.get("auto", True)),
            parse_platforms(table.get("platforms", {}), str(path)),
        )
    return presets


def framework_presets(config: Config, files: Iterable[Path]) -> tuple[list[str], dict[str, str]]:
    """The presets a run uses: the configured ones, else those of the frameworks ``files``
    import or are part of (a file under a ``vllm_ascend/`` directory); and the held ones, as
    top-level module → preset: those frameworks whose preset is opt-in (``auto = false``) and
    not configured. A held framework's own capture blocks are not analysed (its findings there
    are not precise enough without the preset) and a notice says so. One pass over the files for
    both. Raises ``ConfigError`` for a name that is not a preset."""
    presets = all_presets()
    if config.presets is not None:
        unknown = sorted(set(config.presets) - set(presets))
        if unknown:
            raise ConfigError(f"[tool.graphlint] presets: no preset {unknown}; known: {sorted(presets)}")
        return list(dict.fromkeys(config.presets)), {}
    found = _detected({module: name for name, preset in presets.items() for module in preset.detect}, files)
    active = sorted({name for name in found.values() if presets[name].auto})
    return active, {module: name for module, name in found.items() if not presets[name].auto}


def _detected(wanted: dict[str, str], files: Iterable[Path]) -> dict[str, str]:
    """Of ``wanted`` (top-level module → preset), those ``files`` import or are part of."""
    if not wanted:
        return {}
    pattern = re.compile(_IMPORT % b"|".join(re.escape(m.encode()) for m in sorted(wanted)), re.MULTILINE)
    found: dict[str, str] = {}
    for path in files:
        found.update((part, wanted[part]) for part in path.parts[:-1] if part in wanted)  # the framework itself
        try:
            text = read_source(path)
        except OSError:
            continue
        found.update((m.decode(), wanted[m.decode()]) for m in pattern.findall(text))
        if len(found) == len(wanted):
            break
    return found


# ``import vllm…`` / ``from vllm… import``: the framework's top-level module, at a line start.
_IMPORT = rb"^[ \t]*(?:from|import)[ \t]+(%s)\b"


# The knowledge keys that start regions or add callees. Every other key only narrows what a
# region takes (functions none enters, calls not followed, branches decided, nesting that is
# safe): a held preset contributes those.
_WIDENING_KEYS = (
    "compile_entrypoints",
    "capture_entrypoints",
    "compile_roots",
    "capture_roots",
    "compile_exports",
    "capture_exports",
    "dispatch",
)


def knowledge(config: Config, presets: Iterable[str], held: Iterable[str] = ()) -> Knowledge:
    """The project's own knowledge and its presets', merged, each with what it says of the
    platform checked (``config.platform``). A held preset (opt-in, not configured) adds what it
    knows of where code never runs, never what starts a region or what a call runs: its
    framework's captures stay unwalked, but its compiled code is not checked on paths its
    platform never takes. What the facts and the solved graphs are cached under is derived from
    this, so another platform never reads the cache of one."""
    empty = Knowledge()
    merged = config.knowledge.merged(config.platforms.get(config.platform, empty))
    for name in presets:
        preset = all_presets()[name]
        merged = merged.merged(preset.knowledge).merged(preset.platforms.get(config.platform, empty))
    for name in dict.fromkeys(held):
        preset = all_presets()[name]
        narrowing = preset.knowledge.merged(preset.platforms.get(config.platform, empty))
        merged = merged.merged(replace(narrowing, **{key: type(getattr(narrowing, key))() for key in _WIDENING_KEYS}))
    return merged


def glob_pattern(glob: str) -> re.Pattern[str]:
    """A dotted-name glob: ``*`` stays within one name, ``**`` crosses dots. It matches a whole
    dotted name or a tail of one after a dot (``pkg.models.*`` matches ``src.pkg.models.llama``),
    so that modules of namespace packages, named from their paths, still match."""
    parts = []
    for token in re.split(r"(\*\*|\*|\?)", glob):
        parts.append({"**": ".*", "*": r"[^.]*", "?": r"[^.]"}.get(token, re.escape(token)))
    return re.compile(r"(?:^|.*\.)" + "".join(parts) + r"\Z")
