"""The PyTorch / torch_npu / torchair APIs the static checker knows, as data.

Names are fully qualified after import aliases are resolved (``import torch as t`` makes
``t.compile`` read ``torch.compile``) and canonical: torch_npu's copies of torchair and of the
``torch.npu`` namespace read as ``torchair.…`` and ``torch.npu.…`` (see ``CANONICAL_PREFIXES``).
Adding an API is adding a name here.
"""

from __future__ import annotations

# Spellings of one module under another name: the first prefix is rewritten to the second.
CANONICAL_PREFIXES = (
    ("torch_npu.dynamo.torchair.", "torchair."),
    ("torch_npu.npu.", "torch.npu."),
)

# Calls and decorators that hand a function or module to dynamo.
COMPILE_FUNCTIONS = frozenset(
    {
        "torch.compile",
        "torch._dynamo.optimize",
        "torchair.inference.cache_compile",
    }
)
# ``torch._dynamo.optimize(backend)(fn)``: the first call takes the backend, not the target.
COMPILE_FACTORIES = frozenset({"torch._dynamo.optimize"})
# The name of the parameter that takes the target, where it is handed by keyword:
# ``torch.compile(model=f)``, ``cache_compile(func=f)``; what ``torch.compile(mode=...)`` returns
# takes ``model``, what ``optimize(backend)`` returns takes ``fn``.
COMPILE_TARGET_KEYWORDS = {
    "torch.compile": "model",
    "torchair.inference.cache_compile": "func",
    "torch._dynamo.optimize": "fn",
}
TARGET_KEYWORD_NAMES = frozenset(COMPILE_TARGET_KEYWORDS.values())

# torchair backends; with a CompilerConfig whose mode is "reduce-overhead" they capture.
NPU_BACKEND_FACTORIES = frozenset({"torchair.get_npu_backend"})
COMPILER_CONFIG_CLASSES = frozenset(
    {
        "torchair.CompilerConfig",
        "torchair.configs.compiler_config.CompilerConfig",
    }
)
CAPTURE_MODES = frozenset({"reduce-overhead"})
CAPTURE_BACKENDS = frozenset({"npugraph_ex", "cudagraphs"})
# Backends that run the graph dynamo traced eagerly: no compiled graph of their own (GL101).
EAGER_BACKENDS = frozenset({"eager", "aot_eager"})

# ``with torch.npu.graph(g):`` and friends capture whatever runs inside.
CAPTURE_CONTEXTS = frozenset(
    {"torch.npu.graph", "torch.cuda.graph", "torch.npu.graphs.graph", "torch.cuda.graphs.graph"}
)
# True in every graph capture, whatever the framework: the `else` of ``if
# torch.cuda.is_current_stream_capturing():`` is never captured (``capture_values.py``).
CAPTURE_TRUE_CALLS = (
    "torch.cuda.is_current_stream_capturing",
    "torch.npu.is_current_stream_capturing",
    "torch_npu.npu.is_current_stream_capturing",
)
CAPTURE_BEGIN_METHOD = "capture_begin"
CAPTURE_END_METHOD = "capture_end"
MAKE_GRAPHED_CALLABLES = frozenset(
    {
        "torch.cuda.make_graphed_callables",
        "torch.cuda.graphs.make_graphed_callables",
        "torch.npu.make_graphed_callables",
    }
)

# Dynamo does not trace into functions decorated with these (region boundaries).
REGION_BOUNDARY_DECORATORS = frozenset(
    {
        "torch.compiler.disable",
        "torch._dynamo.disable",
        "torch.compiler.allow_in_graph",
        "torch._dynamo.allow_in_graph",
        "torch.library.custom_op",
        "torch._library.custom_ops.custom_op",
        # The Python bodies of registered ops: dynamo calls the op, never traces these.
        "torch.library.impl",
        "torch.library.register_fake",
        "torch.library.impl_abstract",
        "torch.library.register_kernel",
        # A result dynamo takes as a constant: the body is run once, never traced.
        "torch._dynamo.assume_constant_result",
        "torch.compiler.assume_constant_result",
        "transformers.utils.import_utils._make_compile_constant",
    }
)
# The last names of boundary decorators a package applies in the module that defines them (file
# facts name such a local def by its bare name): transformers' spelling of assume_constant_result
# for its availability checks, written without importing torch (it sets the marker dynamo reads).
REGION_BOUNDARY_BARE = frozenset({"_make_compile_constant"})
# ``if is_compiling():`` and the other checks that end a region are in ``dynamo.toml``.

# nn containers whose constructor arguments are the submodules.
MODULE_CONTAINERS = frozenset(
    {"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"}
)

# How values flow through calls graphlint does not analyse (builtins and library functions),
# for the assignment graph (``valueflow.py``). Containers are transparent: what a list holds is
# what the list evaluates to.
# Calls whose result holds the values of their positional arguments.
PASS_THROUGH_CALLS = frozenset(
    {
        "builtins.list", "builtins.tuple", "builtins.set", "builtins.frozenset", "builtins.dict",
        "builtins.sorted", "builtins.reversed", "builtins.iter", "builtins.next", "builtins.enumerate",
        "builtins.zip", "builtins.filter", "copy.copy", "copy.deepcopy", "itertools.chain",
        "itertools.islice", "itertools.zip_longest", "itertools.cycle", "itertools.chain.from_iterable",
        "collections.OrderedDict", "collections.deque", "typing.cast",
        "torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict",
        "torch.nn.modules.container.ModuleList", "torch.nn.modules.container.Sequential",
        "torch.compile", "torch._dynamo.optimize", "torchair.inference.cache_compile",
        "torch.compiler.disable", "torch._dynamo.disable", "torch.no_grad", "torch.inference_mode",
    }
)
# Calls that call their callable arguments (``map(f, xs)`` calls ``f``).
CALLS_ITS_ARGUMENTS = frozenset({"builtins.map", "builtins.filter"})
# Builtins that only read what they are handed: a local passed to one keeps what it holds
# (``getattr(quant_method, "backend", "")``; ``known_values.py``).
READS_ITS_ARGUMENTS = frozenset(
    {"getattr", "hasattr", "isinstance", "issubclass", "len", "id", "type", "callable", "repr", "str", "bool"}
)
# ``functools.partial(f, *args)``: calling the result calls ``f`` with ``args`` first.
PARTIAL_FUNCTIONS = frozenset({"functools.partial"})
# Methods that put their arguments into the container they are called on
# (``layers.append(Layer())``); for these two, only the last argument is stored.
CONTAINER_STORE_METHODS = frozenset(
    {"append", "extend", "insert", "add", "appendleft", "extendleft", "update", "setdefault"}
)
CONTAINER_STORE_LAST_ARGUMENT = frozenset({"insert", "setdefault"})
# Methods that return what the container holds (``modules.get(name)``, ``d.values()``).
CONTAINER_READ_METHODS = frozenset({"get", "pop", "popitem", "popleft", "values", "items", "copy"})
# A parameter annotated as one of these is a module (``layer: torch.nn.Module`` in vLLM's
# quantization methods): what the file registers on it lives on the model's device.
MODULE_CLASSES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
# A parameter annotated with these classes only (and None) holds tensors or plain values: no
# function, class or module of the project, and no instance of one unless its class derives from
# one of these (or, for the tensor classes, any ``torch.*Tensor``: ``torch.LongTensor``).
VALUE_CLASSES = frozenset(
    {
        "torch.Tensor", "torch.nn.Parameter", "builtins.int", "builtins.float", "builtins.bool",
        "builtins.str", "builtins.bytes", "builtins.complex", "enum.IntEnum", "enum.StrEnum", "enum.IntFlag",
    }
)
# Calling an instance of a class runs this method, found through its bases; a torch ``nn.Module``
# without its own ``__call__`` runs ``forward``.
INSTANCE_CALL_METHODS = ("__call__", "forward")

# Factories that make a tensor on the host unless given ``device=`` (GL203; GL201 with .to()).
TENSOR_FACTORIES = frozenset(
    {
        "torch.arange", "torch.range", "torch.zeros", "torch.ones", "torch.full",
        "torch.empty", "torch.rand", "torch.randn", "torch.randint", "torch.randperm",
        "torch.tensor", "torch.linspace", "torch.logspace", "torch.eye",
        "torch.empty_strided", "torch.tril_indices", "torch.triu_indices",
    }
)

# Factories that make their tensor where their first argument is, unless given ``device=``.
LIKE_FACTORIES = frozenset(
    {
        "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
        "torch.rand_like", "torch.randn_like", "torch.randint_like",
    }
)

# The host device: a tensor made there on purpose (``device="cpu"``, ``pin_memory=True``) is
# host-side work, not a forgotten ``device=`` (GL203), and ``.cpu()`` of it copies nothing (GL201).
HOST_DEVICE = "cpu"
# Serving code names its host copies so (``seq_lens_cpu``, ``self.input_ids_cpu``): reading one
# back (``.tolist()``) or ``.cpu()`` of one syncs and copies nothing.
HOST_NAME_SUFFIXES = ("_cpu",)

# Tensor methods whose result stays on the tensor's device (the value flow follows a host
# tensor through them: ``cu_seqlens_cpu.view(-1).tolist()`` reads host memory).
DEVICE_PRESERVING_METHODS = frozenset(
    {
        "detach", "view", "reshape", "contiguous", "clone", "flatten", "ravel", "squeeze", "unsqueeze",
        "long", "int", "float", "half", "bool", "type", "cumsum", "diff", "flip", "narrow", "t",
        "transpose", "permute", "expand", "repeat", "split", "chunk", "unbind",
    }
)

# A ``torch.*`` function computes where its tensor inputs are (``torch.quantile(t, q=0.5)``),
# except under these namespaces: custom kernels, device and process-group APIs.
NOT_INPUT_DEVICE_NAMESPACES = ("torch.ops.", "torch.cuda.", "torch.npu.", "torch.distributed.", "torch.library.")

# Tensor methods that copy between host and device (GL201).
HOST_DEVICE_METHODS = frozenset({"cuda", "npu", "cpu", "numpy"})
DTYPE_NAMES = frozenset(
    {
        "float", "float16", "half", "bfloat16", "float32", "float64", "double", "int",
        "int8", "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64",
        "complex128", "float8_e4m3fn", "float8_e5m2", "cfloat",
    }
)

# Calls that wait for the device or need a data-dependent output shape (GL202).
SYNC_METHODS = frozenset(
    {"item", "tolist", "synchronize", "nonzero", "masked_select", "unique", "argwhere", "bincount"}
)
SYNC_FUNCTIONS = frozenset(
    {
        "torch.nonzero", "torch.masked_select", "torch.unique", "torch.argwhere",
        "torch.npu.synchronize", "torch.cuda.synchronize",
        "torch.unique_consecutive", "torch.bincount",
    }
)
ONE_ARGUMENT_WHERE = "torch.where"
# Of those, the ones that only read values back: free for a tensor already on the host.
READBACK_METHODS = frozenset({"item", "tolist"})

# Calls whose result is a tensor's *value* read back to Python (GL105 when used in a branch).
VALUE_METHODS = frozenset(
    {"any", "all", "item", "sum", "max", "min", "mean", "norm", "equal", "count_nonzero"}
)
VALUE_FUNCTIONS = frozenset(
    {
        "torch.any", "torch.all", "torch.equal", "torch.allclose", "torch.is_nonzero",
        "torch.count_nonzero", "torch.isnan", "torch.isinf", "torch.isfinite",
    }
)

# numpy ↔ tensor bridges (GL104).
NUMPY_BRIDGE_FUNCTIONS = frozenset(
    {
        "torch.from_numpy", "numpy.array", "numpy.asarray", "numpy.ascontiguousarray",
        "numpy.asanyarray", "numpy.copy",
    }
)
NUMPY_BRIDGE_METHODS = frozenset({"numpy"})

# Expressions that give a dynamic int under dynamo (GL102).
SHAPE_ATTRIBUTES = frozenset({"shape"})
SHAPE_METHODS = frozenset({"size", "numel"})
STRING_CONVERSIONS = frozenset({"str", "repr", "format"})

# Calls through ``torch.ops.<namespace>.<op>`` run a registered custom op: dynamo sees one opaque
# node, whatever Python the op's implementation is written in.
OPAQUE_PREFIXES = ("torch.ops.",)

# Keywords ``nn.Module.compile`` accepts (it forwards them to torch.compile, and takes no
# positional argument); any other ``.compile(...)`` is some other object's.
MODULE_COMPILE_KEYWORDS = frozenset({"fullgraph", "dynamic", "backend", "mode", "options", "disable"})

# What makes a tensor known to be 1-D (GL302: without ``dim`` a 1-D input is not flattened).
VECTOR_FACTORIES = frozenset({"torch.arange", "torch.range", "torch.linspace", "torch.logspace", "torch.randperm"})
FLATTENING_METHODS = frozenset({"flatten", "ravel"})
RESHAPE_METHODS = frozenset({"view", "reshape"})

BROADCAST_FUNCTIONS = frozenset({"torch.distributed.broadcast"})
REPEAT_INTERLEAVE = "repeat_interleave"

# Methods of ``nn.Module`` that register a tensor under a name: ``self.register_buffer("x", t)``
# makes ``self.x`` read it (and ``None`` where ``t`` is None).
REGISTERING_METHODS = ("register_buffer", "register_parameter")
REGISTERED_BUFFER = "torch.nn.Module.register_buffer"  # what "made" self.name after register_buffer("name", t)
# What makes ``self.x`` a tensor that moves with the model: indexing it gives a tensor there too.
MODULE_TENSOR_MAKERS = frozenset({REGISTERED_BUFFER, "torch.nn.Parameter"})
