"""What a ``--dump DIR`` holds, by graph: the files the stages wrote, found on disk, each with a
label for the report. Graphs are numbered as dynamo numbers them: ``dynamo/graph_N.py``,
``aot/graph_N_forward.py``, ``capture/graph_N_forward.py``, ``torchair/graph_N.original.pbtxt``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_INLINE = 300_000  # characters of one file shown inline on a graph page; the link has it all
_GRAPH = re.compile(r"^graph_(\d+)(?:_(forward|backward))?(?:\.(original|optimized))?$")
# (folder, the file's kind or GE form) → label, in the order a graph's files are listed
_LABELS = {
    ("dynamo", None): "dynamo FX graph",
    ("aot", "forward"): "aot forward graph (functionalized)",
    ("aot", "backward"): "aot backward graph",
    ("capture", "forward"): "capture audit graph (fake device)",
    ("capture", "backward"): "capture audit backward graph",
    ("torchair", "original"): "GE graph, as torchair's converters built it",
    ("torchair", "optimized"): "GE graph, after torchair's GE passes",
}
_ORDER = list(_LABELS)


def graph_number(name: str) -> int | None:
    """``graph_3``, ``graph_3_forward``, ``graph_3.original`` → 3; anything else → None."""
    found = _GRAPH.match(name)
    return int(found.group(1)) if found else None


@dataclass
class DumpIndex:
    graphs: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # N → [(label, relative path)]
    decompiled: list[str] = field(default_factory=list)  # relative paths of depyf's files
    other: list[str] = field(default_factory=list)  # files under the graph folders not named by a graph number

    @classmethod
    def of(cls, folder: Path) -> "DumpIndex":
        index = cls()
        found: dict[int, list[tuple[int, str, str]]] = {}
        for path in sorted(folder.glob("*/*")):
            if not path.is_file():
                continue
            relative = path.relative_to(folder).as_posix()
            kind_folder = path.parent.name
            if kind_folder == "decompiled":
                index.decompiled.append(relative)
                continue
            if kind_folder not in {f for f, _ in _LABELS}:
                continue
            stem = path.name.removesuffix(".pbtxt").removesuffix(".py")
            match = _GRAPH.match(stem)
            key = (kind_folder, (match.group(2) or match.group(3)) if match else None)
            if match is None or key not in _LABELS:
                index.other.append(relative)
                continue
            found.setdefault(int(match.group(1)), []).append((_ORDER.index(key), _LABELS[key], relative))
        index.graphs = {n: [(label, rel) for _, label, rel in sorted(files)] for n, files in sorted(found.items())}
        return index

    @staticmethod
    def read(path: Path) -> str:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return f"(cannot read {path.name}: {exc.strerror})"
        if len(text) > MAX_INLINE:
            return text[:MAX_INLINE] + f"\n… ({len(text) - MAX_INLINE} more characters: open the file)"
        return text
