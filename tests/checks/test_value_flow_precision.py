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


KEYWORD_SPREAD = """
import torch
from torch import nn


class Embedding(nn.Module):
    def forward(self, ids):
        return ids * 2


class VisionTower(nn.Module):
    def forward(self, pixels):
        return pixels.sum().item()


def embed_mm_inputs(input_ids, input_embedding, multimodal_model=None):
    return input_embedding(input_ids)


def embed_with_split(input_ids, input_embedding, multimodal_model=None):
    embed_kwargs = {BOUND}
    {CHANGED}
    return embed_mm_inputs(input_ids=input_ids, **embed_kwargs)


class VisionLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = Embedding()
        self.vision_tower = VisionTower()

    @torch.compile
    def forward(self, ids):
        return embed_with_split(ids, self.embed_tokens, multimodal_model=self.vision_tower)
"""


@pytest.mark.parametrize(
    ("bound", "changed", "reached"),
    [
        ("dict(multimodal_model=multimodal_model, input_embedding=input_embedding)", "", False),
        ('{"multimodal_model": multimodal_model, "input_embedding": input_embedding}', "", False),
        # keys that may change (a method called on it, a call handed it): spread as one value
        ("dict(multimodal_model=multimodal_model, input_embedding=input_embedding)", "embed_kwargs.update(extra=1)", True),
        ("dict(multimodal_model=multimodal_model, input_embedding=input_embedding)", "print(embed_kwargs)", True),
    ],
)
def test_a_dict_bound_once_is_spread_by_keyword(tmp_path: Path, bound: str, changed: str, reached: bool) -> None:
    """sglang's multimodal embedding: ``embed_kwargs = dict(multimodal_model=..., input_embedding=
    ...)`` handed on as ``**embed_kwargs``. Spread as one value, the vision model reached the
    embedding parameter, and ``input_embedding(input_ids)`` ran it in the compiled forward (on
    sglang's srt every multimodal model then travelled as ``hidden_states`` through every layer).
    Bound once and left alone, each value goes to its own keyword."""
    code = KEYWORD_SPREAD.replace("{BOUND}", bound).replace("{CHANGED}", changed)
    (entry,) = regions(tmp_path, {"app.py": code})
    assert "app.Embedding.forward" in entry["functions"]
    assert ("app.VisionTower.forward" in entry["functions"]) is reached


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


ZIPPED = """
import torch
from torch import nn


def log_input(x):
    return x


class Layer(nn.Module):
    def forward(self, x):
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])
        self.hooks = [log_input, log_input]

    def forward(self, x):
        {loop}
        return x


fast = torch.compile(Model())
"""


@pytest.mark.parametrize(
    ("loop", "reached"),
    [
        ("for hook, layer in zip(self.hooks, self.layers):\n            hook(x)", ["app.Model.forward", "app.log_input"]),
        ("for layer, hook in zip(self.layers, self.hooks):\n            layer(x)", ["app.Layer.forward", "app.Model.forward"]),
        ("for i, hook in enumerate(self.hooks):\n            hook(x)", ["app.Model.forward", "app.log_input"]),
        ("[hook(x) for hook, layer in zip(self.hooks, self.layers)]", ["app.Model.forward", "app.log_input"]),
    ],
    ids=["zip-first", "zip-second", "enumerate", "comprehension"],
)
def test_a_loop_over_zip_binds_each_name_to_its_own_sequence(tmp_path: Path, loop: str, reached: list[str]) -> None:
    """``for hook, layer in zip(hooks, layers)``: ``hook`` holds the hooks, never the layers
    (vLLM's Medusa: ``for hs, lm_head in zip(hidden_states, self.lm_heads)`` made every
    hidden state a layer). Each name still holds its own sequence's elements."""
    (entry,) = regions(tmp_path, {"app.py": ZIPPED.format(loop=loop)})
    assert entry["functions"] == reached


REGISTERED = """
import torch
from torch import nn

REGISTRY = dict()


def register(name):
    def decorator(cls):
        REGISTRY[name] = cls
        return cls

    return decorator


@register("a")
class LayerA(nn.Module):
    def forward(self, x):
        return x


@register("b")
class LayerB(nn.Module):
    def forward(self, x):
        return x


fast = torch.compile({compiled})
"""


@pytest.mark.parametrize(
    ("compiled", "reached"),
    [("LayerA()", ["app.LayerA.forward"]), ("REGISTRY['a']()", ["app.LayerA.forward", "app.LayerB.forward"])],
    ids=["decorated-name", "registry"],
)
def test_a_decorator_returning_its_argument_hands_back_the_class_it_decorates(tmp_path: Path, compiled: str, reached: list[str]) -> None:
    """``@register("a")`` returns the class it is given: ``LayerA`` is ``LayerA``, not every
    class the shared decorator saw (vLLM's ``PluggableLayer.register`` made ``LogitsProcessor``
    every registered layer). The registry it fills still holds both (soundness)."""
    (entry,) = regions(tmp_path, {"app.py": REGISTERED.format(compiled=compiled)})
    assert entry["functions"] == reached


RETURNED_NAME = """
import torch
from torch import nn


class Layer(nn.Module):
    def forward(self, x):
        return x


class Head(nn.Module):
    def forward(self, x):
        return x


def make_list():
    return list()


def pick(layer):
    {body}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = pick(Head())

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


fast = torch.compile(Model())
"""


@pytest.mark.parametrize(
    ("body", "reached"),
    [
        # the parameter is rebound to what a call makes and returned at once: the Head given is
        # not returned (vllm-ascend: a branch returning a host tensor it just made)
        (
            "if layer is not None:\n        layer = nn.ModuleList([Layer()])\n        return layer\n    return nn.ModuleList([Layer(), Layer()])",
            ["app.Layer.forward", "app.Model.forward"],
        ),
        # soundness: what is stored into the made container before the return is returned too
        (
            "layers = make_list()\n    layers.append(layer)\n    return layers",
            ["app.Head.forward", "app.Model.forward"],
        ),
        (
            "layers = make_list()\n    layers[0] = layer\n    return layers",
            ["app.Head.forward", "app.Model.forward"],
        ),
        # a call in between may fill it (a closure appending to it): the name's every value
        (
            "layers = make_list()\n    def fill():\n        layers.append(layer)\n    fill()\n    return layers",
            ["app.Head.forward", "app.Model.forward"],
        ),
        # a branch in between: the name's every value
        (
            "layers = make_list()\n    if layer:\n        layers = [layer]\n    return layers",
            ["app.Head.forward", "app.Model.forward"],
        ),
    ],
    ids=["rebound-and-returned", "appended", "stored", "filled-by-a-call", "branch"],
)
def test_a_name_returned_right_after_a_call_made_it_returns_what_that_call_made(
    tmp_path: Path, body: str, reached: list[str]
) -> None:
    (entry,) = regions(tmp_path, {"app.py": RETURNED_NAME.replace("{body}", body)})
    assert entry["functions"] == reached


CLASS_BODY_FACTORY = """
import torch
from torch import nn


def group_quant(x):
    return x


def tensor_quant(x):
    return x


class CustomOp(nn.Module):
    def __init__(self, compile_native=False):
        super().__init__()
        self._forward_method = self.dispatch_forward(compile_native)

    def forward(self, *args, **kwargs):
        return self._forward_method(*args, **kwargs)

    def dispatch_forward(self, compile_native):
        if torch.cuda.is_available():
            return self.forward_cuda
        return self.maybe_compile(self.forward_native, enable=compile_native)

    def maybe_compile(self, fn, enable=True):
        if not enable:
            return fn
        return torch.compile(fn)


class QuantFP8(CustomOp):
    def forward_native(self, x):
        return tensor_quant(x)

    def forward_cuda(self, x):
        return group_quant(x)


class DecodeConcatQuantFP8(QuantFP8):
    def _make_forward(quant_fn):  # noqa: N805
        def forward(self, nope, pe):
            return quant_fn(self, torch.cat((nope, pe), dim=-1))

        return forward

    forward_native = _make_forward(QuantFP8.forward_native)
    forward_cuda = _make_forward(QuantFP8.forward_cuda)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = DecodeConcatQuantFP8(compile_native=True)

    def forward(self, nope, pe):
        return self.quant(nope, pe)


attention = Attention()
"""


def test_a_def_the_class_body_calls_is_a_plain_function_not_a_method(tmp_path: Path) -> None:
    """vLLM's ``_DecodeConcatQuantFP8`` builds its ``forward_native`` and ``forward_cuda`` with
    ``_make_forward(quant_fn)``, a ``def`` in its class body called there: ``quant_fn`` is the
    function handed in, not an instance of the class. Read as ``self``, calling it ran the op
    again (its ``forward`` and its dispatch), so the compiled ``forward_native`` reached
    ``forward_cuda``'s kernels."""
    (entry,) = regions(tmp_path, {"app.py": CLASS_BODY_FACTORY})
    assert entry["functions"] == ["app.DecodeConcatQuantFP8._make_forward.forward", "app.QuantFP8.forward_native", "app.tensor_quant"]
