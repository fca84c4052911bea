"""Values reach only the parameters Python hands them to: what a shared hub does not spread.

A context-insensitive graph merges what every caller of one function passes. Where a function
only hands its ``*args``/``**kwargs`` on (a custom op's ``forward``, a decorator's wrapper) or a
call spreads a tuple bound once, merging the whole argument list into one value sends each
caller's values to every parameter downstream; in vLLM that tied every layer to every other
layer's code. Each test is a small project in that shape, read through ``graphlint regions``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.checks.test_value_flow import regions

CUSTOM_OP = """
import torch
from torch import nn


class CustomOp(nn.Module):
    def forward(self, *args, **kwargs):
        return self.forward_native(*args, **kwargs)


class Activate(CustomOp):
    def forward_native(self, x, act=None):
        return act(x)


class Gelu(nn.Module):
    def forward(self, x):
        return x


class Head(nn.Module):
    def forward(self, x):
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.activate = Activate()
        self.gelu = Gelu()

    def forward(self, x):
        return {model_call}


class Loader:
    def __init__(self):
        self.activate = Activate()
        self.head = Head()

    def load(self):
        return self.activate(self.head)


fast = torch.compile(Model())
"""


@pytest.mark.parametrize(
    "model_call", ["self.activate(x, self.gelu)", "self.activate(x, act=self.gelu)"], ids=["by-position", "by-keyword"]
)
def test_a_custom_op_hands_each_argument_to_its_own_parameter(tmp_path: Path, model_call: str) -> None:
    """``CustomOp.forward(*args, **kwargs)`` is shared by every caller: the loader's ``head``,
    passed first, is the op's ``x``, never its ``act``, so the compiled model never runs it."""
    (entry,) = regions(tmp_path, {"app.py": CUSTOM_OP.format(model_call=model_call)})
    assert entry["functions"] == ["app.Activate.forward_native", "app.CustomOp.forward", "app.Gelu.forward", "app.Model.forward"]


def test_a_wrapper_forwarding_its_arguments_keeps_them_apart(tmp_path: Path) -> None:
    """A decorator's ``wrapper(*args, **kwargs)`` shared by two functions: a keyword and a
    position handed on through two levels keep their places."""
    code = """
        import functools
        import torch
        from torch import nn


        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)
            return wrapper


        @logged
        def run(model, x, *, hook=None):
            return model(x)


        class Net(nn.Module):
            def forward(self, x):
                return x


        class Hook(nn.Module):
            def forward(self, x):
                return x


        def compiled_step(x):
            return run(Net(), x, hook=Hook())


        fast = torch.compile(compiled_step)
        """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["functions"] == ["app.Net.forward", "app.compiled_step", "app.logged.wrapper", "app.run"]


def test_a_tuple_bound_once_is_spread_by_position(tmp_path: Path) -> None:
    """``client_args = (model, stats); Client(*client_args)``, in branches: the model goes to
    ``model`` and the statistics object to ``stats``, so compiling ``self.model`` reaches only
    the model."""
    code = """
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                return x


        class Stats(nn.Module):
            def forward(self, x):
                return x


        class Client:
            def __init__(self, model, stats):
                self.model = model
                self.stats = stats

            def step(self, x):
                return torch.compile(self.model)(x)


        def make_client(model, stats, remote):
            client_args = (model, stats)
            if remote:
                return Client(*client_args)
            return Client(*client_args)


        make_client(Net(), Stats(), False).step(1)
        """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert entry["functions"] == ["app.Net.forward"]


def test_arguments_of_unknown_position_still_reach_every_parameter(tmp_path: Path) -> None:
    """``*xs`` of a list built elsewhere: its position is not known, so it may be any parameter
    (nothing is dropped where Python could put it)."""
    code = """
        import torch
        from torch import nn


        class CustomOp(nn.Module):
            def forward(self, *args, **kwargs):
                return self.forward_native(*args, **kwargs)


        class Activate(CustomOp):
            def forward_native(self, x, act=None):
                return act(x)


        class Gelu(nn.Module):
            def forward(self, x):
                return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.activate = Activate()
                self.parts = [Gelu()]

            def forward(self, x):
                return self.activate(x, *self.parts)


        fast = torch.compile(Model())
        """
    (entry,) = regions(tmp_path, {"app.py": code})
    assert "app.Gelu.forward" in entry["functions"]
