"""A call under ``if p is None:`` runs only for the calls that may hand ``p`` None: vLLM's
``QuantFP8.forward_cuda`` hands ``use_ue8m0=self.use_ue8m0`` (stored once, never None) to
``per_token_group_quant_fp8``, whose ``if use_ue8m0 is None: use_ue8m0 =
is_deep_gemm_e8m0_used()`` logs (six false ``GL106`` warnings on vLLM). Small projects in that
shape (``not_none.py``): the finding goes when every call hands a value never None, stays when
one may hand None.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.checks.conftest import lint_project

UTILS = """
import functools
import logging
from typing import Optional

logger = logging.getLogger(__name__)


@functools.cache
def e8m0_used() -> bool:
    logger.info("E8M0 enabled")
    return True


def maybe_used() -> Optional[bool]:
    return None


def guessed():
    return True
"""

QUANT = """
import torch
from torch import nn

from utils import e8m0_used, guessed, maybe_used


def group_quant(x, group_size, use_ue8m0=None):
    if use_ue8m0 is None:
        use_ue8m0 = e8m0_used()
    return x * group_size


class QuantFP8(nn.Module):
    def __init__(self, use_ue8m0=None):
        super().__init__()
        self.use_ue8m0 = e8m0_used() if use_ue8m0 is None else use_ue8m0
        self.scale_ue8m0 = STORE

    def forward(self, x):
        return group_quant(x, 128, use_ue8m0=ARGUMENT)
{extra}

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = QuantFP8()

    def forward(self, x):
        return self.quant(x)


compiled = torch.compile(Model())
"""

LOGGED = ("utils.py", "GL106", 11)  # logger.info in e8m0_used


def findings(report: dict[str, Any]) -> set[tuple[str, str, int]]:
    return {(f["path"], f["code"], f["line"]) for f in report["findings"]}


def lint(tmp_path: Path, argument: str, store: str = "True", extra: str = "") -> set[tuple[str, str, int]]:
    quant = QUANT.replace("ARGUMENT", argument).replace("STORE", store).format(extra=extra)
    _, report = lint_project(tmp_path, {"utils.py": UTILS, "quant.py": quant})
    return findings(report)


@pytest.mark.parametrize(
    ("argument", "store", "logged"),
    [
        ("self.use_ue8m0", "True", False),  # vLLM's shape: the narrowed conditional expression
        ("self.scale_ue8m0", "len('ab') > 1", False),
        ("self.scale_ue8m0", "bool(guessed())", False),
        ("self.scale_ue8m0", "guessed() or e8m0_used()", False),
        ("x.dim() > 1", "True", False),
        ("None", "True", True),
        ("self.scale_ue8m0", "guessed()", True),  # not annotated: may return None
        ("self.scale_ue8m0", "maybe_used()", True),  # Optional-annotated
        ("self.scale_ue8m0", "None if guessed() else True", True),
        ("maybe_used()", "True", True),
        ("self.missing", "True", True),  # no store at all
    ],
    ids=[
        "narrowed-attribute", "comparison", "bool-call", "or-annotated", "comparison-argument",
        "none", "unannotated-call", "optional-annotated", "none-branch", "optional-argument",
        "never-stored",
    ],
)
def test_a_call_under_is_none_runs_only_where_an_argument_may_be_none(
    tmp_path: Path, argument: str, store: str, logged: bool
) -> None:
    found = lint(tmp_path, argument, store)
    assert (LOGGED in found) is logged, found


def test_a_store_elsewhere_may_be_none(tmp_path: Path) -> None:
    """A subclass (or any other object) storing the attribute with a value not judged keeps
    the branch: which class the receiver is, the walk does not say."""
    extra = """

class LegacyQuant(QuantFP8):
    def __init__(self, use_ue8m0=None):
        super().__init__(use_ue8m0)
        self.use_ue8m0 = use_ue8m0
"""
    assert LOGGED in lint(tmp_path, "self.use_ue8m0", extra=extra)


def test_a_dataclass_field_may_be_none(tmp_path: Path) -> None:
    """``e8m0_scales: bool = True`` in a class body is a field a generated ``__init__`` sets
    from its caller (``Options(e8m0_scales=None)``), whatever its default."""
    extra = """

import dataclasses


@dataclasses.dataclass
class Options:
    e8m0_scales: bool = True

    def quantize(self, x):
        return group_quant(x, 32, use_ue8m0=self.e8m0_scales)
"""
    quant = QUANT.replace("return group_quant(x, 128, use_ue8m0=ARGUMENT)", "return Options().quantize(x)")
    _, report = lint_project(tmp_path, {"utils.py": UTILS, "quant.py": quant.replace("STORE", "True").format(extra=extra)})
    assert LOGGED in findings(report)


def test_a_setattr_of_the_name_may_be_none(tmp_path: Path) -> None:
    extra = """

def reset(quant):
    setattr(quant, "use_ue8m0", None)
"""
    assert LOGGED in lint(tmp_path, "self.use_ue8m0", extra=extra)


def test_a_parameter_is_never_none_where_every_call_of_its_copy_hands_such_a_value(tmp_path: Path) -> None:
    """``forward`` hands ``flag``, its own parameter: judged by the calls of ``quantize``."""
    extra = """
    def quantize(self, x, flag):
        return group_quant(x, 64, use_ue8m0=flag)
"""
    passing = "self.quantize(x, self.use_ue8m0)"
    quant = QUANT.replace("return group_quant(x, 128, use_ue8m0=ARGUMENT)", f"return {passing}")
    quant = quant.replace("STORE", "True").format(extra=extra)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    _, report = lint_project(tmp_path / "a", {"utils.py": UTILS, "quant.py": quant})
    assert LOGGED not in findings(report)
    _, report = lint_project(tmp_path / "b", {"utils.py": UTILS, "quant.py": quant.replace(passing, f"{passing} + self.quantize(x, None)")})
    assert LOGGED in findings(report)
