"""Guards that decide, per call, what a function returns or runs: the false-alarm classes vLLM's
decoder layers showed once the value flow reached them.

- a quantization config's ``get_quant_method(layer)`` returns a method per layer class, under
  ``isinstance`` tests of every form (``or``, a tuple, ``not ...`` then ``return``);
- ``set_forward_context(num_tokens_across_dp=None)`` synchronizes only under ``if p is None:``,
  so a call that passes a value never runs it;
- a parameter's default flows only where some call leaves the argument out;
- under CUDA or NPU graph capture, a custom op dispatches to its accelerator kernels, never to
  ``forward_cpu``.

Each test is a small project in that shape, read through ``graphlint regions``.
"""

from __future__ import annotations

from contextlib import chdir
from pathlib import Path

import pytest

from tests.checks.conftest import found, lint_project, run_cli
from tests.checks.test_value_flow import regions

QUANT_CONFIG = """
import torch
from torch import nn


class LinearMethod:
    def apply(self, layer, x):
        return x


class MoeMethod:
    def apply(self, layer, x):
        return x.sum().item()


class QuantConfig:
    lm_head_quantized = True

    def get_quant_method(self, layer, prefix):
{body}


class LinearBase(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.quant_method = quant_config.get_quant_method(self, prefix="")

    def forward(self, x):
        return self.quant_method.apply(self, x)


class ParallelLMHead(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.quant_method = quant_config.get_quant_method(self, prefix="lm_head")

    def forward(self, x):
        return self.quant_method.apply(self, x)


class FusedMoE(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.quant_method = quant_config.get_quant_method(self, "experts")

    def forward(self, x):
        return self.quant_method.apply(self, x)


class Model(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.proj = LinearBase(quant_config)
        self.lm_head = ParallelLMHead(quant_config)
        self.experts = FusedMoE(quant_config)

    def forward(self, x):
        return self.{called}(x)


fast = torch.compile(Model(QuantConfig()))


def _is_fused_moe_layer(layer: nn.Module) -> bool:
    return isinstance(layer, (FusedMoE,))


def _is_linear(layer, strict=True):
    \"\"\"A linear layer or the LM head (vllm-ascend's configs define such predicates per file).\"\"\"
    return isinstance(layer, LinearBase) or isinstance(layer, ParallelLMHead)
"""

GUARD_FORMS = {
    "nested": """
        if isinstance(layer, (LinearBase, ParallelLMHead)):
            if prefix.startswith("skip"):
                return None
            return LinearMethod()
        elif isinstance(layer, (FusedMoE,)):
            return MoeMethod()
        return None""",
    "or": """
        if isinstance(layer, LinearBase) or (isinstance(layer, ParallelLMHead) and self.lm_head_quantized):
            return LinearMethod()
        elif isinstance(layer, FusedMoE):
            return MoeMethod()
        return None""",
    "tuple": """
        if isinstance(layer, (LinearBase, ParallelLMHead)):
            return LinearMethod()
        if isinstance(layer, FusedMoE):
            return MoeMethod()
        return None""",
    "not-then-return": """
        if not isinstance(layer, FusedMoE):
            return LinearMethod()
        return MoeMethod()""",
    "local-in-branches": """
        if isinstance(layer, (LinearBase, ParallelLMHead)):
            quant_method = LinearMethod()
            if getattr(quant_method, "backend", "") == "marlin":
                quant_method.input_dtype = describe(prefix)
            return quant_method
        elif isinstance(layer, FusedMoE):
            quant_method = MoeMethod()
            if getattr(quant_method, "backend", "") == "marlin":
                quant_method.input_dtype = describe(prefix)
            return quant_method
        return None""",
    "local-in-branches-or-default": """
        if isinstance(layer, (LinearBase, ParallelLMHead)):
            quant_method = LinearMethod()
            return quant_method if quant_method is not None else LinearMethod()
        elif isinstance(layer, FusedMoE):
            quant_method = MoeMethod()
            return quant_method if quant_method is not None else MoeMethod()
        return None""",
    "predicate": """
        if _is_fused_moe_layer(layer):
            return MoeMethod()
        if _is_linear(layer):
            return LinearMethod()
        return None""",
    "not-predicate-then-return": """
        if not _is_fused_moe_layer(layer):
            return LinearMethod()
        return MoeMethod()""",
    "not-else": """
        if not isinstance(layer, (LinearBase, ParallelLMHead)):
            return MoeMethod()
        else:
            return LinearMethod()""",
}


@pytest.mark.parametrize("form", sorted(GUARD_FORMS))
@pytest.mark.parametrize(
    ("called", "method"),
    [("lm_head", "app.LinearMethod.apply"), ("proj", "app.LinearMethod.apply"), ("experts", "app.MoeMethod.apply")],
    ids=["lm-head", "linear", "moe"],
)
def test_a_quant_method_chosen_by_isinstance_goes_only_to_the_layers_of_its_classes(
    tmp_path: Path, form: str, called: str, method: str
) -> None:
    """vLLM's quantization configs (``awq_marlin``: ``isinstance(layer, LinearBase) or
    (isinstance(layer, ParallelLMHead) and ...)``): the LM head gets the linear method, never the
    MoE method and its host synchronization; the MoE layer never the linear one."""
    (entry,) = regions(tmp_path, {"app.py": QUANT_CONFIG.format(body=GUARD_FORMS[form], called=called)})
    layer = {"lm_head": "app.ParallelLMHead.forward", "proj": "app.LinearBase.forward", "experts": "app.FusedMoE.forward"}[called]
    assert entry["functions"] == sorted([method, layer, "app.Model.forward"])


def test_an_outside_value_for_the_guarded_parameter_opens_only_outside_classes(tmp_path: Path) -> None:
    """A layer graphlint knows only as an instance of an outside class (``nn.Linear``) is no
    instance of a project class: the project's MoE branch stays closed; a value graphlint does
    not know at all (what an outside call returns) opens every branch."""
    code = QUANT_CONFIG.format(body=GUARD_FORMS["tuple"], called="proj") + """

class Outside(nn.Module):
    def __init__(self, quant_config):
        super().__init__()
        self.quant_method = quant_config.get_quant_method(nn.Linear(2, 2), "")
        self.unknown_method = quant_config.get_quant_method(torch.load("layer.pt"), "")

    def forward(self, x):
        return self.quant_method.apply(self, x)

    def unknown(self, x):
        return self.unknown_method.apply(self, x)


outside = torch.compile(Outside(QuantConfig()))
unknown = torch.compile(Outside(QuantConfig()).unknown)
"""
    _, known_outside, unknown = regions(tmp_path, {"app.py": code})
    assert "app.MoeMethod.apply" not in known_outside["functions"]
    assert "app.LinearMethod.apply" not in known_outside["functions"]
    assert {"app.MoeMethod.apply", "app.LinearMethod.apply"} <= set(unknown["functions"])


def test_a_guard_on_a_rebound_parameter_guards_nothing(tmp_path: Path) -> None:
    """``layer = unwrap(layer)`` before the test: the guard speaks of another value, so every
    return counts."""
    body = "\n        layer = unwrap(layer)" + GUARD_FORMS["nested"]
    code = QUANT_CONFIG.format(body=body, called="proj") + "\n\ndef unwrap(layer):\n    return layer\n"
    (entry,) = regions(tmp_path, {"app.py": code})
    assert {"app.MoeMethod.apply", "app.LinearMethod.apply"} <= set(entry["functions"])


FORWARDING_CONFIG = """

class Fp4Config(QuantConfig):
    def get_quant_method(self, layer, prefix):
        if isinstance(layer, FusedMoE) and prefix == "fp4":
            return MoeMethod()
        return super().get_quant_method(layer, prefix)


class MarlinConfig(Fp4Config):
    def get_quant_method(self, layer, prefix):
        return super().get_quant_method(layer, prefix)


def unwrap(layer):
    return layer


fp4 = torch.compile(Model(Fp4Config()))
marlin = torch.compile(Model(MarlinConfig()))
"""


@pytest.mark.parametrize(
    ("called", "method"),
    [("lm_head", "app.LinearMethod.apply"), ("experts", "app.MoeMethod.apply")],
    ids=["lm-head", "moe"],
)
def test_a_guard_reached_through_a_forwarding_method_is_judged_per_call_of_it(
    tmp_path: Path, called: str, method: str
) -> None:
    """vLLM's ``DeepseekV4Fp8Config.get_quant_method(layer, prefix)`` ends in ``return
    super().get_quant_method(layer, prefix)``: the base's ``isinstance(layer, ...)`` guard reads
    the forwarding method's own parameter, which holds every layer, and it opened the MoE
    method for the LM head. The guard now judges each call of the forwarding method (and of a
    method forwarding to that one) by what it hands over."""
    code = QUANT_CONFIG.format(body=GUARD_FORMS["tuple"], called=called) + FORWARDING_CONFIG
    entries = regions(tmp_path, {"app.py": code})
    assert len(entries) == 3
    layer = {"lm_head": "app.ParallelLMHead.forward", "experts": "app.FusedMoE.forward"}[called]
    for entry in entries:
        assert entry["functions"] == sorted([method, layer, "app.Model.forward"])


@pytest.mark.parametrize(
    ("called", "method"),
    [("proj", "app.LinearMethod.apply"), ("experts", "app.MoeMethod.apply")],
    ids=["linear", "moe"],
)
def test_a_forwarding_return_under_its_own_guard_passes_both_guards(tmp_path: Path, called: str, method: str) -> None:
    """vLLM's ``MoeWNA16Config.get_quant_method``: ``elif isinstance(layer, LinearBase): return
    AutoGPTQConfig.from_config(...).get_quant_method(layer, prefix)``, whose ``isinstance(layer,
    RoutedExperts)`` branch returns the MoE method. A linear layer never gets it (it passes the
    outer test, not the inner one); the MoE layer gets only its own branch's method."""
    code = QUANT_CONFIG.format(body=GUARD_FORMS["tuple"], called=called) + """

class WNA16Config(QuantConfig):
    def get_quant_method(self, layer, prefix):
        if isinstance(layer, LinearBase):
            return QuantConfig.from_config().get_quant_method(layer, prefix)
        elif isinstance(layer, FusedMoE):
            return MoeMethod()
        return None

    @classmethod
    def from_config(cls):
        return QuantConfig()


wna16 = torch.compile(Model(WNA16Config()))
"""
    code = code.replace("class QuantConfig:\n", "class QuantConfig:\n    @staticmethod\n    def from_config():\n        return QuantConfig()\n\n")
    _, wna16 = regions(tmp_path, {"app.py": code})
    layer = {"proj": "app.LinearBase.forward", "experts": "app.FusedMoE.forward"}[called]
    assert wna16["functions"] == sorted([method, layer, "app.Model.forward"])


@pytest.mark.parametrize(
    ("called", "method"),
    [("lm_head", "app.LinearMethod.apply"), ("experts", "app.MoeMethod.apply")],
    ids=["lm-head", "moe"],
)
def test_configs_that_forward_to_each_other_end(tmp_path: Path, called: str, method: str) -> None:
    """vLLM's ``AWQConfig.get_quant_method`` returns ``AWQMarlinConfig``'s for some linear
    layers and ``AWQMarlinConfig``'s returns ``AWQConfig``'s for others: a guard carried round
    that cycle comes back to where it started and is kept once (it recursed until Python's
    limit), and each layer still gets only its own method."""
    code = QUANT_CONFIG.format(body=GUARD_FORMS["tuple"], called=called) + """

class AWQConfig(QuantConfig):
    def get_quant_method(self, layer, prefix):
        if isinstance(layer, LinearBase) and prefix == "marlin":
            return AWQMarlinConfig().get_quant_method(layer, prefix)
        return super().get_quant_method(layer, prefix)


class AWQMarlinConfig(QuantConfig):
    def get_quant_method(self, layer, prefix):
        if isinstance(layer, LinearBase) and prefix != "marlin":
            return AWQConfig().get_quant_method(layer, prefix)
        return super().get_quant_method(layer, prefix)


awq = torch.compile(Model(AWQConfig()))
"""
    _, awq = regions(tmp_path, {"app.py": code})
    layer = {"lm_head": "app.ParallelLMHead.forward", "experts": "app.FusedMoE.forward"}[called]
    assert awq["functions"] == sorted([method, layer, "app.Model.forward"])


def test_a_forwarding_method_that_rebinds_its_parameter_forwards_no_guard(tmp_path: Path) -> None:
    """``layer = unwrap(layer)`` in the forwarding method: what it hands on is not what its
    callers handed it, so every return of the base reaches every caller."""
    forwarding = FORWARDING_CONFIG.replace(
        "        return super().get_quant_method(layer, prefix)\n\n\nclass Marlin",
        "        layer = unwrap(layer)\n        return super().get_quant_method(layer, prefix)\n\n\nclass Marlin",
    )
    assert "unwrap(layer)\n" in forwarding
    code = QUANT_CONFIG.format(body=GUARD_FORMS["tuple"], called="lm_head") + forwarding
    _, fp4, marlin = regions(tmp_path, {"app.py": code})
    assert {"app.MoeMethod.apply", "app.LinearMethod.apply"} <= set(fp4["functions"])
    assert {"app.MoeMethod.apply", "app.LinearMethod.apply"} <= set(marlin["functions"])


@pytest.mark.parametrize(
    "between",
    [
        "reset()",
        "quant_method = pick(quant_method)",
        "for step in range(2):\n                quant_method.input_dtype = step\n                quant_method = MoeMethod()",
    ],
    ids=["closure-rebinds", "rebound", "rebound-in-a-loop"],
)
def test_a_local_that_may_be_rebound_before_its_return_holds_every_value(tmp_path: Path, between: str) -> None:
    """``quant_method = LinearMethod()`` then ``return quant_method``: what the call made, unless
    something in between may make the local hold another value (a closure the call runs,
    another binding, a loop that binds it)."""
    body = f"""
        def reset():
            nonlocal quant_method
            quant_method = MoeMethod()

        if isinstance(layer, (LinearBase, ParallelLMHead)):
            quant_method = LinearMethod()
            {between}
            return quant_method
        elif isinstance(layer, FusedMoE):
            quant_method = MoeMethod()
            return quant_method
        return None"""
    code = QUANT_CONFIG.format(body=body, called="lm_head") + "\n\ndef pick(method):\n    return MoeMethod() if method else method\n"
    (entry,) = regions(tmp_path, {"app.py": code})
    assert "app.MoeMethod.apply" in entry["functions"]


LAYER_TYPE_DEFAULT = """
import torch
from torch import nn


class LlamaDecoderLayer(nn.Module):
    def forward(self, x):
        return x * x.abs().max().item()


class MixtralDecoderLayer(nn.Module):
    def forward(self, x):
        return x * 2


EXTRA = []


def add_layer(layer_type=LlamaDecoderLayer):
    EXTRA.append(layer_type())


class LlamaModel(nn.Module):
    def __init__(self, *, prefix="", layer_type=LlamaDecoderLayer):
        super().__init__()
        self.layers = nn.ModuleList([layer_type() for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class MixtralModel(LlamaModel):
    def __init__(self):
        super().__init__(prefix="model", layer_type=MixtralDecoderLayer)
        add_layer(layer_type=MixtralDecoderLayer)

    def forward(self, x):
        x = super().forward(x)
        for layer in EXTRA:
            x = layer(x)
        return x


fast = torch.compile(MixtralModel())
{more}
"""


# built by a framework out of sight (a registry by name): its __init__ runs with its defaults,
# though a subclass's super().__init__(layer_type=...) is in sight
NEVER_CONSTRUCTED = """
@torch.compile
class Head(nn.Module):
    def __init__(self, layer_type=LlamaDecoderLayer):
        super().__init__()
        self.layer = layer_type()

    def forward(self, x):
        return self.layer(x)


class MixtralHead(Head):
    def __init__(self):
        super().__init__(layer_type=MixtralDecoderLayer)
"""


@pytest.mark.parametrize(
    ("more", "llama"),
    [
        ("", False),
        ("llama = torch.compile(LlamaModel(prefix='llama'))", True),
        ("torch.utils.hooks.register(add_layer)", True),
        (NEVER_CONSTRUCTED, True),
    ],
    ids=["every-call-passes-it", "a-call-leaves-it-out", "handed-to-an-outside-call", "no-call-in-sight"],
)
def test_a_default_flows_only_where_a_call_can_leave_the_argument_out(tmp_path: Path, more: str, llama: bool) -> None:
    """vLLM's ``LlamaModel.__init__(..., layer_type=LlamaDecoderLayer)``: a model that derives
    from it passes its own ``layer_type``, so its compiled ``forward`` never runs a
    ``LlamaDecoderLayer``; a call that leaves the argument out does, and so may an outside call
    that is handed the function (``add_layer``), and a class built out of sight (``LlamaModel``
    itself is, here, in its own copy of ``__init__``: no entry compiles it)."""
    entries = regions(tmp_path, {"app.py": LAYER_TYPE_DEFAULT.format(more=more)})
    assert "app.MixtralDecoderLayer.forward" in entries[0]["functions"]
    assert ("app.LlamaDecoderLayer.forward" in set().union(*(e["functions"] for e in entries))) is llama


FORWARD_CONTEXT = """
import torch
import torch.distributed as dist
from contextlib import contextmanager
from torch import nn


def coordinate_batch_across_dp(num_tokens):
    counts = torch.tensor([num_tokens], device="cuda")
    dist.all_reduce(counts)
    return counts, counts.cpu()


@contextmanager
def set_forward_context(attn_metadata, config, num_tokens=None, num_tokens_across_dp=None):
    if config.dp_size > 1 and (attn_metadata is not None or num_tokens is not None):
        if num_tokens_across_dp is None:
            _, num_tokens_across_dp = coordinate_batch_across_dp(num_tokens)
    yield


class CustomOp(nn.Module):
    def __init__(self, compile_native=False):
        super().__init__()
        self.impl = self.maybe_compile(self.forward_native, enable=compile_native)

    def maybe_compile(self, fn, *, enable=True):
        if not enable:
            return fn
        return compiled(fn)

    def forward(self, x):
        return self.impl(x)


def compiled(fn):
    return fn


class Conv(CustomOp):
    def __init__(self):
        super().__init__(compile_native=False)

    def forward_native(self, x):
        return x


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.conv = Conv()

    def forward(self, x, n):
        with set_forward_context({arguments}):
            return self.conv(x)


model = Model(config=None)


def capture(x, n):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(x, n)
"""


@pytest.mark.parametrize(
    ("arguments", "synchronizes"),
    [
        ("None, self.config", False),
        ("x, self.config, num_tokens=n, num_tokens_across_dp=torch.full((2,), n)", False),
        ("x, self.config, num_tokens=n", True),
        ("x, self.config, n, None", True),
        ("x, self.config, num_tokens=n, num_tokens_across_dp=self.counts", True),
    ],
    ids=["no-tokens-given", "counts-given", "counts-left-out", "counts-none", "counts-unknown"],
)
def test_a_call_under_if_p_is_none_runs_only_for_calls_that_can_hand_p_none(
    tmp_path: Path, arguments: str, synchronizes: bool
) -> None:
    """vLLM's ``set_forward_context``: the all-reduce of ``coordinate_batch_across_dp`` runs
    only under ``if num_tokens_across_dp is None:`` (and only when ``attn_metadata`` or
    ``num_tokens`` is given); a captured caller that hands over a tensor never runs it, one
    that leaves it out, passes ``None`` or a value graphlint does not know may."""
    (entry,) = regions(tmp_path, {"app.py": FORWARD_CONTEXT.format(arguments=arguments)})
    assert "app.set_forward_context" in entry["functions"]
    assert ("app.coordinate_batch_across_dp" in entry["functions"]) is synchronizes


def test_a_false_flag_returns_before_the_compile(tmp_path: Path) -> None:
    """vLLM's ``CustomOp.maybe_compile(fn, enable=compile_native)`` returns ``fn`` at ``if not
    enable:``; what follows (the compile) runs only for a call that may hand a true value."""
    code = FORWARD_CONTEXT.format(arguments="None, self.config") + """

def build():
    return CustomOp().maybe_compile(Conv().forward_native, enable=False)


def build_compiled():
    return CustomOp().maybe_compile(Conv().forward_native)


with torch.cuda.graph(torch.cuda.CUDAGraph()):
    build()
with torch.cuda.graph(torch.cuda.CUDAGraph()):
    build_compiled()
"""
    _, disabled, enabled = regions(tmp_path, {"app.py": code})
    assert "app.CustomOp.maybe_compile" in disabled["functions"] and "app.compiled" not in disabled["functions"]
    assert "app.compiled" in enabled["functions"]


def test_a_partial_hands_over_arguments_the_call_does_not_show(tmp_path: Path) -> None:
    """``start = partial(set_forward_context, metadata)``: ``start(config, n)`` hands ``n`` to
    ``num_tokens``, not to ``config``; what the call shows is not what the function gets, so
    nothing is decided from it."""
    code = FORWARD_CONTEXT.format(arguments="None, self.config") + """

import functools

start = functools.partial(set_forward_context, torch.zeros(1))


def run_started():
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        with start(None, 4):
            pass
"""
    entries = regions(tmp_path, {"app.py": code})
    assert "app.coordinate_batch_across_dp" not in entries[0]["functions"]
    assert "app.coordinate_batch_across_dp" in entries[1]["functions"]


SELF_ATTRIBUTE = """
import torch


def pick(x=None):
    if x is None:
        return torch.zeros(1)
    return x


def unwrap(model):
    model = model.module.module
    return pick(model.make())


compiled = torch.compile(unwrap)
"""


def test_a_variable_bound_to_an_attribute_of_itself_decides_nothing(tmp_path: Path) -> None:
    """transformers' ``model = model.module.module`` (a parameter rebound once to its own
    attribute), then a call's result handed to ``pick(x=None)``: reading which function made the
    argument followed the name into itself until the walk's recursion limit, an internal error
    on the file. The argument is unknown, so ``pick``'s ``if x is None:`` call may run."""
    entries = regions(tmp_path, {"app.py": SELF_ATTRIBUTE})
    assert entries and sorted(entries[0]["functions"]) == ["app.pick", "app.unwrap"]


CUSTOM_OPS = """
import torch
from torch import nn


def op_enabled(op):
    return op.name in ENABLED


ENABLED = set()


class CustomOp(nn.Module):
    name = ""

    def __init__(self, *, enforce_enable=False, compile_native=False):
        super().__init__()
        self._forward_method = self.dispatch_forward(compile_native=compile_native)

    def forward(self, *args, **kwargs):
        return self._forward_method(*args, **kwargs)

    def forward_native(self, *args, **kwargs):
        raise NotImplementedError

    def forward_cuda(self, *args, **kwargs):
        return self.forward_native(*args, **kwargs)

    def dispatch_forward(self, compile_native):
        if not op_enabled(self):
            return self.maybe_compile(self.forward_native, enable=compile_native)
        return self.forward_cuda

    def maybe_compile(self, fn, *, enable=True):
        if not enable:
            return fn
        return torch.compile(fn, dynamic=True)  # the nested compile, where it runs


class RMSNorm(CustomOp):
    name = "rms_norm"

    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden

    def forward_native(self, x):
        return x * x.pow(2).mean(-1, keepdim=True).rsqrt()


class SiluAndMul(CustomOp):
    name = "silu_and_mul"

    def __init__(self, *, compile_native=True):
        super().__init__(compile_native=compile_native)

    def forward_native(self, x):
        return x.sigmoid() * x


class HCHeadOp(CustomOp):
    name = "hc_head"

    def forward_native(self, x):
        return x.sum(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.op = {op}

    def forward(self, x):
        return self.op(x)


def capture(graph, x):
    model = Model()
    with torch.cuda.graph(graph):  # an eager capture: the op's own compile runs its own graph here
        return model(x)
"""
COMPILE_LINE = CUSTOM_OPS.splitlines().index("        return torch.compile(fn, dynamic=True)  # the nested compile, where it runs") + 2


@pytest.mark.parametrize(
    ("op", "nested"),
    [
        ("RMSNorm(8)", False),
        ("HCHeadOp()", False),
        ("SiluAndMul(compile_native=False)", False),
        ("SiluAndMul()", True),
        ("SiluAndMul(compile_native=FLAGS[0])", True),
        ("RMSNorm(8)\n        atexit.register(self.op.maybe_compile, self.op.forward_native)", True),
    ],
    ids=["default-two-calls-up", "inherited-init", "keyword-three-calls-up", "true-default", "unknown", "handed-to-outside-code"],
)
def test_a_false_flag_carried_through_parameters_keeps_the_compile_from_running(tmp_path: Path, op: str, nested: bool) -> None:
    """vLLM's custom ops: ``CustomOp.__init__(compile_native=False)`` hands the flag to
    ``dispatch_forward(compile_native=...)``, which hands it to ``maybe_compile(fn,
    enable=...)``, which returns before ``torch.compile(fn)`` when it is false. ``RMSNorm``
    leaves the default (and ``HCHeadOp``, with no ``__init__`` of its own, is built with it), so
    its ``forward_native`` is never compiled there and is no nested compile under the capture; ``SiluAndMul()``'s own default is true, and a flag graphlint
    does not know compiles as far as it can tell, and so does a method handed to code outside
    the project (which may call it with anything)."""
    code = "import atexit\n" + CUSTOM_OPS.replace("{op}", op) + "\nFLAGS = [True]\n"
    status, report = lint_project(tmp_path, {"app.py": code}, "--select", "GL101")
    assert status in (0, 1)
    assert (("GL101", COMPILE_LINE) in found(report)) is nested


def test_a_handler_does_not_see_what_its_try_body_bound(tmp_path: Path) -> None:
    """``quant_method = MoeMethod()`` before a ``try`` whose body binds ``LinearMethod()``: the
    ``except`` may run before that binding, so its ``return quant_method`` returns either."""
    body = """
        quant_method = MoeMethod()
        try:
            quant_method = LinearMethod()
        except ValueError:
            return quant_method
        return None"""
    (entry,) = regions(tmp_path, {"app.py": QUANT_CONFIG.format(body=body, called="lm_head")})
    assert {"app.MoeMethod.apply", "app.LinearMethod.apply"} <= set(entry["functions"])


def test_a_predicate_that_calls_itself_is_no_guard(tmp_path: Path) -> None:
    """``def _is_fused_moe_layer(layer): return _is_fused_moe_layer(layer) or isinstance(...)``
    says nothing the walk can read (and reading it must end): every layer keeps every method."""
    body = """
        if _is_fused_moe_layer(layer):
            return MoeMethod()
        return LinearMethod()"""
    code = QUANT_CONFIG.format(body=body, called="proj").replace(
        "return isinstance(layer, (FusedMoE,))", "return _is_fused_moe_layer(layer) or isinstance(layer, (FusedMoE,))"
    )
    (entry,) = regions(tmp_path, {"app.py": code})
    assert {"app.LinearMethod.apply", "app.MoeMethod.apply"} <= set(entry["functions"])



CALL_IN_ANNOTATION = """\
import torch
from typing import Optional


def step(x, *s: Optional[torch.get_device_module().Stream], k: torch.get_device_module().Event = None) -> torch.get_device_module().Stream:
    return x.item()


@torch.compile
def run(x):
    return step(x)
"""


def test_a_call_in_an_annotation_keeps_the_file_in_the_value_flow(tmp_path: Path) -> None:
    """sglang's ``cp_stream: torch.get_device_module().Stream``: libcst counts the annotation's
    call and the ``ast`` reading did not, so the file's calls could not be numbered and its value
    flow was dropped (the compiled ``run`` reached nothing), or reading the annotation as a class
    raised. Parameter, ``*args`` and return annotations: the compiled caller's ``.item()`` is found."""
    status, report = lint_project(tmp_path, {"app.py": CALL_IN_ANNOTATION})
    assert ("GL202", 6) in found(report), report["findings"]
    assert "unnumbered_files" not in report["summary"]


def test_a_file_whose_calls_cannot_be_numbered_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the ``ast`` and libcst readings of a file still disagree on its calls, its value flow
    is dropped: the coverage line and the JSON summary name the file, never a silent pass. (No
    construct this Python parses is known to disagree now: one call is hidden from the ``ast``
    reading to stand for one.)"""
    from graphlint.checks import assignments, extract

    def one_call_less(*args: object, **kwargs: object) -> object:
        flow = assignments.flow_facts(*args, **kwargs)  # type: ignore[arg-type]
        flow.calls.pop()
        return flow

    monkeypatch.setattr(extract, "flow_facts", one_call_less)
    status, report = lint_project(tmp_path, {"app.py": CALL_IN_ANNOTATION})
    assert report["summary"]["unnumbered_files"] == ["app.py"]
    with chdir(tmp_path):
        _, out = run_cli("check", ".", "--no-cache")
    assert "1 file(s) whose calls could not be numbered (app.py)" in out
