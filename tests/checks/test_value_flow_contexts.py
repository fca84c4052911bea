"""Values a shared helper hands back or builds, kept per caller: identity layers, layer factories
and decorator closures.

In vLLM every model shares a pipeline placeholder layer whose ``forward(*args, **kwargs)``
returns its first argument, and one ``make_layers(n, layer_fn, prefix)`` that calls each model's
layer factory; transformers' decorators share one closure wrapper. Context-insensitive, each of
them hands every model's values to every other model. Each test is a small project in those
shapes (written here), read through ``graphlint regions``. These contexts were a preview
(``[tool.graphlint] preview = true``) and are on by default now (docs/callgraph.md "Call-site
contexts"); ``preview = false`` shares the helpers between every caller, as before.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project
from tests.checks.test_value_flow import regions


PREVIEW = "[tool.graphlint]\npreview = true\n"


def compiled(tmp_path: Path, files: dict[str, str], function: str, pyproject: str = PREVIEW) -> list[str]:
    """The functions of the one entry that reaches ``function`` (``preview = true`` unless told)."""
    (functions,) = [e["functions"] for e in regions(tmp_path, files, pyproject=pyproject) if function in e["functions"]]
    return functions

IDENTITY = """
from torch import nn


class MissingLayer(nn.Identity):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        return args[0] if args else next(iter(kwargs.values()))


class Keyed(nn.Module):
    def forward(self, *args, **kwargs):
        return kwargs.get("block", args[0])
"""

MODELS = """
import torch
from torch import nn
from layers import Keyed, MissingLayer


class LlamaBlock(nn.Module):
    def forward(self, x):
        return x


class MambaBlock(nn.Module):
    def forward(self, x):
        return x


class QwenBlock(nn.Module):
    def forward(self, x):
        return x


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.placeholder = MissingLayer()
        self.block = LlamaBlock()

    def forward(self, x):
        block = self.placeholder(self.block)
        return block(x)


class Mamba(nn.Module):
    def __init__(self):
        super().__init__()
        self.placeholder = MissingLayer()
        self.block = MambaBlock()

    def forward(self, x):
        block = self.placeholder(block=self.block)
        return block(x)


class Qwen(nn.Module):
    def __init__(self):
        super().__init__()
        self.keyed = Keyed()

    def forward(self, x):
        return self.keyed(x, block=QwenBlock())(x)


class Falcon(nn.Module):
    def __init__(self):
        super().__init__()
        self.keyed = Keyed()

    def forward(self, x):
        return self.keyed(LlamaBlock())(x)


llama = torch.compile(Llama())
mamba = torch.compile(Mamba())
qwen = torch.compile(Qwen())
falcon = torch.compile(Falcon())
"""


def test_an_identity_layer_over_args_and_kwargs_returns_each_callers_own_argument(tmp_path: Path) -> None:
    """``return args[0] if args else next(iter(kwargs.values()))``: Llama's placeholder hands back
    Llama's block (by position), Mamba's hands back Mamba's (by keyword), never each other's."""
    llama = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Llama.forward")
    mamba = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Mamba.forward")
    assert "models.LlamaBlock.forward" in llama and "models.MambaBlock.forward" not in llama
    assert "models.MambaBlock.forward" in mamba and "models.LlamaBlock.forward" not in mamba


def test_a_keyword_read_with_a_default_returns_the_keyword_or_the_default(tmp_path: Path) -> None:
    """``kwargs.get("block", args[0])``: Qwen's call gets its own ``block=`` keyword (and its own
    first argument, a tensor), Falcon's its own first argument; neither the other's block."""
    qwen = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Qwen.forward")
    falcon = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Falcon.forward")
    assert "models.QwenBlock.forward" in qwen and "models.LlamaBlock.forward" not in qwen
    assert "models.LlamaBlock.forward" in falcon and "models.QwenBlock.forward" not in falcon


def test_an_identity_layer_called_with_unknown_arguments_returns_what_every_caller_passed(tmp_path: Path) -> None:
    """Soundness: ``self.placeholder(*blocks)`` fills ``args[0]`` from a tuple graphlint does not
    split, so the call gets the shared parameter: every block any caller handed the placeholder
    by position (here Mamba's too)."""
    models = MODELS.replace("block = self.placeholder(self.block)", "blocks = self.make()\n        block = self.placeholder(*blocks)", 1)
    models = models.replace("self.placeholder(block=self.block)", "self.placeholder(self.block)")
    models = models.replace("    def forward(self, x):\n        blocks", "    def make(self):\n        return [self.block]\n\n    def forward(self, x):\n        blocks", 1)
    llama = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": models}, "models.Llama.forward")
    assert "models.LlamaBlock.forward" in llama and "models.MambaBlock.forward" in llama


LAYER_UTILS = """
import torch
from torch import nn


class MissingLayer(nn.Identity):
    pass


def make_layers(num_layers, layer_fn, prefix):
    start, end = 0, num_layers
    modules = nn.ModuleList(
        [MissingLayer() for _ in range(start)]
        + [layer_fn(prefix=f"{prefix}.{i}") for i in range(start, end)]
    )
    return start, end, modules
"""

LAYER_MODELS = """
import torch
from torch import nn
from utils import make_layers


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()

    def forward(self, x):
        return x


class MambaDecoderLayer(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()

    def forward(self, x):
        return x


class LlamaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.start, self.end, self.layers = make_layers(
            config.n, lambda prefix: LlamaDecoderLayer(config, prefix=prefix), prefix="model.layers"
        )

    def forward(self, x):
        for layer in self.layers[self.start:self.end]:
            x = layer(x)
        return x


class MambaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.start, self.end, self.layers = make_layers(
            config.n, lambda prefix: MambaDecoderLayer(config, prefix=prefix), prefix="model.layers"
        )

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


llama = torch.compile(LlamaModel(None))
mamba = torch.compile(MambaModel(None))
"""


def test_a_layer_factory_helper_builds_each_models_own_layers(tmp_path: Path) -> None:
    """``make_layers(n, lambda prefix: Layer(...), prefix)`` called by two models: each model's
    ``ModuleList`` holds its own decoder layers only, so each compiled model runs its own."""
    files = {"utils.py": LAYER_UTILS, "models.py": LAYER_MODELS}
    llama = compiled(tmp_path, files, "models.LlamaModel.forward")
    mamba = compiled(tmp_path, files, "models.MambaModel.forward")
    assert "models.LlamaDecoderLayer.forward" in llama and "models.MambaDecoderLayer.forward" not in llama
    assert "models.MambaDecoderLayer.forward" in mamba and "models.LlamaDecoderLayer.forward" not in mamba


def test_with_preview_false_the_shared_helpers_hold_every_callers_values(tmp_path: Path) -> None:
    """``preview = false`` turns the contexts off: the placeholder layer and ``make_layers`` are
    shared by every model, as before."""
    off = "[tool.graphlint]\npreview = false\n"
    llama = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Llama.forward", pyproject=off)
    assert {"models.LlamaBlock.forward", "models.MambaBlock.forward"} <= set(llama)
    files = {"utils.py": LAYER_UTILS, "models.py": LAYER_MODELS}
    layers = compiled(tmp_path, files, "models.LlamaModel.forward", pyproject=off)
    assert {"models.LlamaDecoderLayer.forward", "models.MambaDecoderLayer.forward"} <= set(layers)


def test_with_no_configuration_the_contexts_are_on(tmp_path: Path) -> None:
    """The contexts are the default: with no ``[tool.graphlint]`` each model gets its own block
    back from the placeholder layer and its own layers from ``make_layers``."""
    llama = compiled(tmp_path, {"layers.py": IDENTITY, "models.py": MODELS}, "models.Llama.forward", pyproject="")
    assert "models.LlamaBlock.forward" in llama and "models.MambaBlock.forward" not in llama
    files = {"utils.py": LAYER_UTILS, "models.py": LAYER_MODELS}
    layers = compiled(tmp_path, files, "models.LlamaModel.forward", pyproject="")
    assert "models.LlamaDecoderLayer.forward" in layers and "models.MambaDecoderLayer.forward" not in layers


def test_a_helper_past_the_size_bound_is_shared_by_its_callers(tmp_path: Path) -> None:
    """Soundness of the bound: a ``make_layers`` with more calls than ``MAX_CALLS_RUNNING`` (it
    calls its ``layer_fn``) is analysed once, so its one ``layer_fn`` holds both factories and
    each model reaches both layers."""
    padding = "".join(f"    torch.manual_seed({i})\n" for i in range(50))
    utils = LAYER_UTILS.replace("    start, end = 0, num_layers\n", "    start, end = 0, num_layers\n" + padding)
    llama = compiled(tmp_path, {"utils.py": utils, "models.py": LAYER_MODELS}, "models.LlamaModel.forward")
    assert "models.LlamaDecoderLayer.forward" in llama and "models.MambaDecoderLayer.forward" in llama


DECORATORS = """
import functools


def can_return_tuple(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        output = func(self, *args, **kwargs)
        return output
    return wrapper
"""

DECORATED = """
import torch
from torch import nn
from decorators import can_return_tuple


class Attention(nn.Module):
    def forward(self, x):
        return x


class Mlp(nn.Module):
    def forward(self, x):
        return x


class BertModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = Attention()

    @can_return_tuple
    def forward(self, x):
        return self.attention(x)


class GptModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = Mlp()

    @can_return_tuple
    def forward(self, x):
        return self.mlp(x)


bert = torch.compile(BertModel())
"""


def test_a_decorator_closure_wraps_only_the_function_it_decorates(tmp_path: Path) -> None:
    """``@can_return_tuple`` on two models' ``forward``: the compiled Bert runs its own
    ``forward`` through the wrapper, never Gpt's (one ``wrapper`` copy per decoration)."""
    bert = compiled(tmp_path, {"decorators.py": DECORATORS, "models.py": DECORATED}, "models.BertModel.forward")
    assert "decorators.can_return_tuple.wrapper" in bert and "models.Attention.forward" in bert
    assert "models.GptModel.forward" not in bert and "models.Mlp.forward" not in bert


PLACEHOLDER = """
def _dummy_decorator(name):
    def decorator(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

    return decorator


jit = _dummy_decorator("jit")
"""

KERNELS = """
import torch
from placeholder import jit


def rms_helper(x):
    return x


def rope_helper(x):
    return x


@jit(do_not_specialize=["n"])
def rms_kernel(x):
    rms_helper(x)


@jit(do_not_specialize=["n"])
def rope_kernel(x):
    rope_helper(x)


@torch.compile
def rms(x):
    rms_kernel[(1,)](x)
"""


def test_an_identity_lambda_a_decorator_returns_hands_back_each_decorated_function(tmp_path: Path) -> None:
    """A placeholder decorator with arguments returns ``lambda f: f``, one lambda for every
    kernel it decorates: each decoration gets its own kernel back, so launching one kernel runs
    that kernel only."""
    rms = compiled(tmp_path, {"placeholder.py": PLACEHOLDER, "kernels.py": KERNELS}, "kernels.rms")
    assert "kernels.rms_helper" in rms and "kernels.rope_helper" not in rms


LAUNCH = """
import torch
from torch import nn


def identity(f):
    return f


class Launcher:
    def launch(self, kernel, *args):
        return kernel(*args)


launcher = Launcher()


class LlamaBlock(nn.Module):
    def forward(self, x):
        return x


class MambaBlock(nn.Module):
    def forward(self, x):
        return x


class Llama(nn.Module):
    def forward(self, x):
        return launcher.launch(identity, LlamaBlock())(x)


class Mamba(nn.Module):
    def forward(self, x):
        return identity(MambaBlock())(x)


llama = torch.compile(Llama())
mamba = torch.compile(Mamba())
"""


def test_a_function_returning_its_parameter_called_with_forwarded_args_returns_that_element(tmp_path: Path) -> None:
    """``kernel(*args)`` in a launcher hands ``identity`` the launcher's own ``*args``: the
    launch gets back what the launcher's callers put at that position, not every value any
    caller handed ``identity`` (Mamba calls it directly)."""
    llama = compiled(tmp_path, {"launch.py": LAUNCH}, "launch.Llama.forward")
    assert "launch.LlamaBlock.forward" in llama and "launch.MambaBlock.forward" not in llama


OFFLOADER = """
class NoopOffloader:
    def wrap_modules(self, modules_generator):
        return list(modules_generator)


class PrefetchOffloader:
    def wrap_modules(self, modules_generator):
        all_modules = []
        for module in modules_generator:
            all_modules.append(module)
        return all_modules


_instance = NoopOffloader()


def set_offloader(instance):
    global _instance
    _instance = instance


def get_offloader():
    return _instance
"""


def test_a_helpers_copy_follows_the_small_method_it_hands_its_layers_to(tmp_path: Path) -> None:
    """``make_layers`` hands its generator of layers to ``get_offloader().wrap_modules(...)``, a
    method every model's copy calls: within each copy it is copied too, so what it returns is
    still that model's layers only."""
    utils = LAYER_UTILS.replace(
        '+ [layer_fn(prefix=f"{prefix}.{i}") for i in range(start, end)]',
        '+ get_offloader().wrap_modules(layer_fn(prefix=f"{prefix}.{i}") for i in range(start, end))',
    ).replace("from torch import nn\n", "from torch import nn\nfrom offloader import get_offloader\n", 1)
    assert "wrap_modules" in utils
    models = LAYER_MODELS + "\nfrom offloader import PrefetchOffloader, set_offloader\nset_offloader(PrefetchOffloader())\n"
    files = {"utils.py": utils, "offloader.py": OFFLOADER, "models.py": models}
    llama = compiled(tmp_path, files, "models.LlamaModel.forward")
    assert "models.LlamaDecoderLayer.forward" in llama and "models.MambaDecoderLayer.forward" not in llama


TRACING = """
import functools


def instrument(obj=None, *, span_name=""):
    if obj is None:
        return functools.partial(instrument, span_name=span_name)
    return instrument_otel(func=obj, span_name=span_name)


def instrument_otel(func, span_name):
    @functools.wraps(func)
    def sync_wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return sync_wrapper
"""

TRACED = """
import torch
from torch import nn
from tracing import instrument


class Attention(nn.Module):
    def forward(self, x):
        return x


class Mlp(nn.Module):
    def forward(self, x):
        return x


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = Attention()

    @instrument(span_name="encode")
    def forward(self, x):
        return self.attention(x)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = Mlp()

    @instrument(span_name="decode")
    def forward(self, x):
        return self.mlp(x)


encoder = torch.compile(Encoder())
"""


def test_a_decorator_that_hands_the_function_to_a_wrapping_helper_wraps_each_function_apart(tmp_path: Path) -> None:
    """``@instrument(span_name=...)`` returns a partial of itself, which hands the decorated
    function to ``instrument_otel``, whose closure calls it: the decorator is copied per
    decoration and the helper per copy, so the compiled encoder runs its own ``forward`` only."""
    encoder = compiled(tmp_path, {"tracing.py": TRACING, "models.py": TRACED}, "models.Encoder.forward")
    assert "tracing.instrument_otel.sync_wrapper" in encoder and "models.Attention.forward" in encoder
    assert "models.Decoder.forward" not in encoder and "models.Mlp.forward" not in encoder


ONLINE_QUANT = """
import torch
from torch import nn


class LinearBase(nn.Module):
    pass


class RoutedExperts(nn.Module):
    pass


class Fp8LinearMethod:
    def apply(self, layer, x):
        return x


class Fp8MoEMethod:
    def __init__(self, layer=None):
        self.layer = layer

    def apply(self, layer, x):
        return x


class Int8MoEMethod(Fp8MoEMethod):
    def apply(self, layer, x):
        return x


class UnquantizedLinearMethod(Fp8LinearMethod):
    pass


class UnquantizedMoEMethod(Fp8MoEMethod):
    pass


LINEAR_METHODS = {"fp8": Fp8LinearMethod}
MOE_METHODS = {"fp8": Fp8MoEMethod, "int8": Int8MoEMethod}


class OnlineConfig:
    def __init__(self, linear, moe):
        self.linear = linear
        self.moe = moe

    def _dispatch(self, key, table, layer):
        if key is None:
            return None
        cls = table.get(key)
        if cls is None:
            raise ValueError(f"no method for {key}")
        if isinstance(layer, RoutedExperts):
            return cls(layer=layer)
        return cls()

    def get_quant_method(self, layer):
        if isinstance(layer, LinearBase):
            method = self._dispatch(self.linear, LINEAR_METHODS, layer)
            return method if method is not None else UnquantizedLinearMethod()
        elif isinstance(layer, RoutedExperts):
            method = self._dispatch(self.moe, MOE_METHODS, layer)
            return method if method is not None else UnquantizedMoEMethod()
        return None


class Linear(LinearBase):
    def __init__(self, config):
        super().__init__()
        self.quant_method = config.get_quant_method(self)

    def forward(self, x):
        return self.quant_method.apply(self, x)


class Experts(RoutedExperts):
    def __init__(self, config):
        super().__init__()
        self.quant_method = config.get_quant_method(self)

    def forward(self, x):
        return self.quant_method.apply(self, x)


class DenseModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = Linear(config)

    def forward(self, x):
        return self.proj(x)


class MoEModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.experts = Experts(config)

    def forward(self, x):
        return self.experts(x)


config = OnlineConfig("fp8", "int8")
dense = torch.compile(DenseModel(config))
moe = torch.compile(MoEModel(config))
"""


def test_a_method_calling_what_it_looks_up_in_the_table_it_is_handed_is_copied_per_call_site(tmp_path: Path) -> None:
    """vLLM's online quantization config picks a linear layer's method and an MoE layer's from
    two tables through one ``self._dispatch(spec, table, layer)``, which calls
    ``table.get(spec.weight)``, and returns ``method if method is not None else ...`` from each
    ``isinstance`` branch: per call site, a linear layer gets only linear methods."""
    dense = compiled(tmp_path, {"quant.py": ONLINE_QUANT}, "quant.DenseModel.forward")
    moe = compiled(tmp_path, {"quant.py": ONLINE_QUANT}, "quant.MoEModel.forward")
    assert "quant.Fp8LinearMethod.apply" in dense
    assert "quant.Fp8MoEMethod.apply" not in dense and "quant.Int8MoEMethod.apply" not in dense
    assert "quant.Int8MoEMethod.apply" in moe and "quant.Fp8LinearMethod.apply" not in moe


KERNEL_CHOICE = """
import torch
from torch import nn


class MarlinKernel:
    def apply_weights(self, x):
        return x


class ExllamaKernel(MarlinKernel):
    def apply_weights(self, x):
        return x


class Fp8BlockKernel:
    def apply_weights(self, x):
        return x


BACKEND_KERNELS = {"marlin": {MarlinKernel}, "exllama": {ExllamaKernel}, "fp8": {Fp8BlockKernel}}
MIXED_PRECISION_KERNELS = [MarlinKernel, ExllamaKernel]
FP8_BLOCK_KERNELS = [Fp8BlockKernel]


def _filter_kernels_by_backend(backend, kernels):
    wanted = BACKEND_KERNELS.get(backend, set())
    return [k for k in kernels if k in wanted]


def choose_mp_linear_kernel(backend):
    kernels = MIXED_PRECISION_KERNELS
    if backend != "auto":
        kernels = _filter_kernels_by_backend(backend, kernels)
    for kernel in kernels:
        return kernel
    raise ValueError(backend)


def choose_fp8_block_kernel(backend):
    kernels = FP8_BLOCK_KERNELS
    if backend != "auto":
        kernels = _filter_kernels_by_backend(backend, kernels)
    for kernel in kernels:
        return kernel
    raise ValueError(backend)


class GPTQLinear(nn.Module):
    def __init__(self, backend):
        super().__init__()
        self.kernel = choose_mp_linear_kernel(backend)()

    def forward(self, x):
        return self.kernel.apply_weights(x)


class Fp8Linear(nn.Module):
    def __init__(self, backend):
        super().__init__()
        self.kernel = choose_fp8_block_kernel(backend)()

    def forward(self, x):
        return self.kernel.apply_weights(x)


gptq = torch.compile(GPTQLinear("marlin"))
fp8 = torch.compile(Fp8Linear("fp8"))
"""


def test_a_helper_returning_the_elements_of_a_list_it_is_handed_returns_each_callers_own(tmp_path: Path) -> None:
    """vLLM's kernel choosers filter their own kernel list through one
    ``_filter_kernels_by_backend(backend, kernels)`` (``[k for k in kernels if ...]``): per call
    site, the mixed-precision chooser gets back mixed-precision kernels only."""
    gptq = compiled(tmp_path, {"kernels.py": KERNEL_CHOICE}, "kernels.GPTQLinear.forward")
    fp8 = compiled(tmp_path, {"kernels.py": KERNEL_CHOICE}, "kernels.Fp8Linear.forward")
    assert "kernels.MarlinKernel.apply_weights" in gptq and "kernels.ExllamaKernel.apply_weights" in gptq
    assert "kernels.Fp8BlockKernel.apply_weights" not in gptq
    assert "kernels.Fp8BlockKernel.apply_weights" in fp8 and "kernels.MarlinKernel.apply_weights" not in fp8


LAYER_PACKAGE = {
    "models/__init__.py": "",
    "models/utils.py": """
from torch import nn


class PPMissingLayer(nn.Identity):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        return args[0] if args else next(iter(kwargs.values()))


def make_layers(num_hidden_layers, layer_fn, prefix):
    start_layer, end_layer = 0, num_hidden_layers
    modules = nn.ModuleList(
        [PPMissingLayer() for _ in range(start_layer)]
        + [layer_fn(prefix=f"{prefix}.{idx}") for idx in range(start_layer, end_layer)]
        + [PPMissingLayer() for _ in range(end_layer, num_hidden_layers)]
    )
    return start_layer, end_layer, modules
""",
    "models/llama.py": """
import torch
from torch import nn

from models.utils import make_layers


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()

    def forward(self, hidden_states):
        return hidden_states * 2


@torch.compile
class LlamaModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers,
            lambda prefix: LlamaDecoderLayer(config, prefix=prefix),
            prefix=f"{prefix}.layers",
        )

    def forward(self, hidden_states):
        for layer in self.layers[self.start_layer:self.end_layer]:
            hidden_states = layer(hidden_states)
        return hidden_states
""",
    "models/mamba.py": """
import torch
from torch import nn

from models.utils import make_layers


class MambaDecoderLayer(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()

    def forward(self, hidden_states):
        if hidden_states.sum().item() > 0:
            return hidden_states
        return -hidden_states


@torch.compile
class MambaModel(nn.Module):
    def __init__(self, config, prefix=""):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers,
            lambda prefix: MambaDecoderLayer(config, prefix=prefix),
            prefix=f"{prefix}.layers",
        )

    def forward(self, hidden_states):
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states
""",
}


def test_a_shared_layer_factory_reports_a_layers_sync_through_its_own_model_only(tmp_path: Path) -> None:
    """A models package in vLLM's shape: two compiled models build their layers with one
    ``make_layers(n, lambda prefix: Layer(...), prefix)`` and loop over them. Each model's forward
    reaches its own decoder layer only, and the ``.item()`` in ``MambaDecoderLayer.forward`` is
    reported once, through ``MambaModel.forward``; with the contexts off (``preview = false``) the
    shared factory gives both models both layers, and the sync is reported through another chain."""
    llama = compiled(tmp_path, LAYER_PACKAGE, "models.llama.LlamaModel.forward", pyproject="")
    mamba = compiled(tmp_path, LAYER_PACKAGE, "models.mamba.MambaModel.forward", pyproject="")
    assert "models.llama.LlamaDecoderLayer.forward" in llama and "models.mamba.MambaDecoderLayer.forward" not in llama
    assert "models.mamba.MambaDecoderLayer.forward" in mamba and "models.llama.LlamaDecoderLayer.forward" not in mamba

    def syncs(pyproject: str) -> list[tuple[str, int, tuple[str, ...]]]:
        _, report = lint_project(tmp_path, {k: textwrap.dedent(v) for k, v in LAYER_PACKAGE.items()}, pyproject=pyproject)
        return sorted((f["path"], f["line"], tuple(f["region"]["chain"])) for f in report["findings"] if f["code"] == "GL202")

    assert syncs("") == [("models/mamba.py", 13, ("MambaModel.forward", "MambaDecoderLayer.forward"))]
    off = "[tool.graphlint]\npreview = false\n"
    assert "models.mamba.MambaDecoderLayer.forward" in compiled(tmp_path, LAYER_PACKAGE, "models.llama.LlamaModel.forward", pyproject=off)
    assert syncs(off) != syncs("")


# sglang's shape (managers/mm_utils.py): one routine every multimodal model's ``forward`` calls
# with its own language model, past the small-helper bounds (here 30 assignments) but calling
# that parameter as it came.
MM_ROUTINE = """
def embed_routine(input_ids, forward_batch, language_model, data_embedding_funcs=None, **kwargs):
    embed_tokens = language_model.get_input_embeddings()
    if forward_batch.mm_inputs:
        items = [item for item in forward_batch.mm_inputs if item is not None]
        prefix_lens = [n for i, n in enumerate(forward_batch.prefix_lens) if forward_batch.mm_inputs[i]]
        seq_lens = [n for i, n in enumerate(forward_batch.seq_lens) if forward_batch.mm_inputs[i]]
        embeds = embed_tokens(input_ids)
        for modality, embed in (data_embedding_funcs or {}).items():
            found = [item for item in items if item.modality == modality]
            features = embed(found) if found else None
            offset = sum(prefix_lens)
            length = sum(seq_lens)
            start = offset
            end = offset + length
            width = end - start
            kwargs["features"] = features
        forward_batch.mm_inputs = None
        forward_batch.embeds = embeds
    else:
        embeds = embed_tokens(input_ids)
    first = input_ids
    last = embeds
    extra = dict(kwargs)
    scale = 1.0
    shift = 0
    batch = forward_batch
    tokens = input_ids
    positions = kwargs.get("positions")
    embedding = embed_tokens
    hidden_states = language_model(input_ids=None, forward_batch=forward_batch, input_embeds=embeds, **kwargs)
    return hidden_states
"""

MM_MODELS = """
import torch
from torch import nn
from mm_utils import embed_routine


class SmallLanguageModel(nn.Module):
    def get_input_embeddings(self):
        return nn.Embedding(8, 8)

    def forward(self, input_ids, forward_batch, input_embeds=None, **kwargs):
        return input_embeds


class MoeLanguageModel(nn.Module):
    def get_input_embeddings(self):
        return nn.Embedding(8, 8)

    def forward(self, input_ids, forward_batch, input_embeds=None, **kwargs):
        if input_embeds.sum().item() > 0:
            return input_embeds
        return input_embeds * 2


class SmallVisionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.language_model = SmallLanguageModel()

    def forward(self, input_ids, forward_batch):
        return embed_routine(input_ids, forward_batch, language_model=self.language_model)


class MoeVisionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.language_model = MoeLanguageModel()

    def forward(self, input_ids, forward_batch):
        return embed_routine(input_ids, forward_batch, language_model=self.language_model)


def capture(model, input_ids, forward_batch):
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        model(input_ids, forward_batch)


capture(SmallVisionModel(), None, None)
"""


def test_a_routine_running_the_model_it_is_handed_runs_each_callers_own(tmp_path: Path) -> None:
    """A helper past the small bounds that calls its parameter as it came (sglang's
    ``general_mm_embed_routine(..., language_model, ...)``: ``language_model(...)``) still gets a
    copy per call site: the captured small vision model runs its own language model, not the MoE
    one another model hands in, whose ``.item()`` is then no finding; both models' routines
    reach their own."""
    files = {"mm_utils.py": MM_ROUTINE, "models.py": MM_MODELS}
    functions = compiled(tmp_path, files, "models.SmallVisionModel.forward")
    assert "models.SmallLanguageModel.forward" in functions
    assert "models.MoeLanguageModel.forward" not in functions
    _, report = lint_project(tmp_path, {}, pyproject=PREVIEW)
    assert not [f for f in report["findings"] if f["path"] == "models.py" and f.get("region")]
    moe = MM_MODELS.replace("capture(SmallVisionModel(), None, None)", "capture(MoeVisionModel(), None, None)")
    _, report = lint_project(tmp_path, {"models.py": textwrap.dedent(moe)}, pyproject=PREVIEW)
    assert [f["line"] for f in report["findings"] if f["path"] == "models.py" and f.get("region")] == [20]
