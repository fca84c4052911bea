"""What torch_npu and torchair's native modules give back off-device: stand-ins that answer like
the real thing where the answer is known, and say so where it is not.

A stand-in module hands out a ``StandIn`` for any attribute. Calling one looks its dotted name
up in ``native_answers.toml`` (beside this file): there each native entry point torchair's
converters and pre-scans call has the answer the real module gives for a graph it does not know
(``get_registered_ir_def`` of an op CANN has no IR for: ``("ERROR", [], [], [])``), checked
against torchair's own callers. Any other call gives another ``StandIn``, which is falsy (so "is
the device there?" takes the no-device branch) but refuses to be used as a value: iterating,
unpacking, indexing, comparing or converting it raises ``StandInCannotAnswer`` naming it.

Every refusal and every assumed answer is noted in ``StandInLog``, so the torchair stage can
tell a verdict of torchair's from one made up by a stand-in, even when torchair caught the
exception itself.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphlint.tomlfile import read_toml

ANSWERS_FILE = Path(__file__).with_name("native_answers.toml")


class StandInCannotAnswer(Exception):
    """A stand-in was asked for a value only the native module (and CANN) could give."""

    def __init__(self, name: str, use: str) -> None:
        super().__init__(f"graphlint's stand-in for {name} cannot answer offline (it was {use})")
        self.stand_in = name


@dataclass(frozen=True)
class NativeAnswer:
    value: Any
    assumed: bool  # the real answer depends on the CANN installed; this one is graphlint's choice
    why: str


@functools.cache
def native_answers(path: Path = ANSWERS_FILE) -> dict[str, NativeAnswer]:
    data = read_toml(path)
    return {
        name: NativeAnswer(entry.get("value"), bool(entry.get("assumed", False)), entry["why"])
        for name, entry in data.get("answer", {}).items()
    }


@dataclass
class StandInLog:
    """What the stand-ins could not answer, and which answers were assumptions, in order."""

    refused: list[StandInCannotAnswer] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.refused.clear()
        self.assumed.clear()

    def mark(self) -> int:
        return len(self.refused)

    def refused_since(self, mark: int) -> list[str]:
        return list(dict.fromkeys(e.stand_in for e in self.refused[mark:]))


LOG = StandInLog()  # one per process: the offline session clears it on entry


def _refuse(name: str, use: str) -> StandInCannotAnswer:
    error = StandInCannotAnswer(name, use)
    LOG.refused.append(error)
    return error


class StandIn:
    """A native attribute or the result of a native call."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> "StandIn":
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return StandIn(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        answer = native_answers().get(self._name)
        if answer is None:
            return StandIn(f"{self._name}()")
        if answer.assumed and self._name not in LOG.assumed:
            LOG.assumed.append(self._name)
        return copy.deepcopy(answer.value)

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<graphlint stand-in for {self._name}>"

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        raise _refuse(self._name, f"compared with {other!r}")

    def __ne__(self, other: object) -> bool:
        raise _refuse(self._name, f"compared with {other!r}")

    def __lt__(self, other: object) -> bool:
        raise _refuse(self._name, "ordered")

    __le__ = __gt__ = __ge__ = __lt__

    def __iter__(self) -> Any:
        raise _refuse(self._name, "iterated or unpacked")

    def __len__(self) -> int:
        raise _refuse(self._name, "asked for its length")

    def __getitem__(self, key: object) -> Any:
        raise _refuse(self._name, f"indexed with {key!r}")

    def __contains__(self, item: object) -> bool:
        raise _refuse(self._name, "searched")

    def __int__(self) -> int:
        raise _refuse(self._name, "converted to a number")

    __index__ = __float__ = __int__

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type]:
        # ``class TorchNpuGraph(_torchair.TorchNpuGraphBase)``: a base class of stand-ins
        return (type(self._name.rsplit(".", 1)[-1], (_StandInBase,), {"_name": self._name}),)


class _StandInBase:
    """The base class a native class becomes: takes any arguments, has every method."""

    _name = "a native class"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, attr: str) -> StandIn:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return StandIn(f"{self._name}.{attr}")

    def __repr__(self) -> str:
        return f"<graphlint stand-in for {self._name}>"


def stand_in_behind(error: BaseException) -> str | None:
    """The stand-in that raised ``error`` or that it went through (its cause, its context, a
    stand-in in its message), or None when no stand-in took part."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StandInCannotAnswer):
            return current.stand_in
        if "graphlint stand-in for " in str(current):
            return str(current).split("graphlint stand-in for ", 1)[1].split(">", 1)[0]
        current = current.__cause__ or current.__context__
    return None
