"""``[tool.graphlint]`` in ``pyproject.toml``: what the project tells the static checker.

    [tool.graphlint]
    select = ["GL1", "GL2"]              # code prefixes to report (default: all)
    ignore = ["GL302"]                   # code prefixes not to report
    exclude = ["build", "legacy/*.py"]   # paths (globs, relative to the project root) to skip
    per-file-ignores = {"tests/*" = ["GL2"]}
    presets = ["vllm"]                   # framework presets (default: those the project imports)
    compile-entrypoints = ["mylib.jit"]  # decorators / wrappers whose target is compiled
    capture-entrypoints = ["mylib.graphs.capture"]
    nesting-safe-entrypoints = ["mylib.jit"]
    compile-roots = ["mypkg.models.*.*ForCausalLM.forward"]
    capture-roots = ["mypkg.ops.**.forward_npu"]
    src = ["python"]                     # the project's import roots (default: found from its imports)
    extra-paths = ["../vllm"]            # code outside the project it runs in: read, never reported
    platform = "npu"                     # the device the project runs on when checked: "npu" (default) or "cuda"

    [tool.graphlint.platforms.npu]       # knowledge that holds only on that platform
    capture-false-calls = ["mylib.is_cuda"]

(``Knowledge`` describes every knowledge key.) Keys may be spelled with ``-`` or ``_``. The
project root is the nearest directory with a ``pyproject.toml`` or a ``.git``.

``platform`` is the one device graphlint checks the project on: its graphs (``torch.npu.graph``
or ``torch.cuda.graph``) and its dispatch. Knowledge keys at the top of ``[tool.graphlint]`` (and
of a preset) hold on every platform; those in a ``platforms.<name>`` table are merged in only when
``<name>`` is the platform checked (a framework's ``is_cuda()`` is false on the NPU).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphlint.tomlfile import TOMLDecodeError, read_toml


class ConfigError(ValueError):
    """``[tool.graphlint]`` is malformed (a usage error: exit status 2)."""


# The devices whose graphs graphlint checks (``platform = ...``); the NPU unless a project says.
PLATFORMS = ("npu", "cuda")
DEFAULT_PLATFORM = "npu"


@dataclass(frozen=True)
class Knowledge:
    """What compiles, captures and dispatches in a project, by qualified name: the same keys in
    ``[tool.graphlint]`` and in the framework presets (``graphlint/checks/presets/*.toml``).

    ``compile-entrypoints`` / ``capture-entrypoints``: decorators and wrapper calls whose target
    (the decorated function or class, the first argument) is compiled / captured.
    ``nesting-safe-entrypoints``: those of them that skip compiling when already inside a
    compile (never a GL101). ``replaced-entrypoints``: compile entry points (``torch.compile``
    itself) that the framework replaces with a plain call when it is loaded, as MindSpeed
    does: they start no region, and the coverage line counts them. ``compile-roots`` / ``capture-roots``: functions, by dotted name
    with globs (``*`` within one name, ``**`` across dots), that run compiled / captured.
    ``compile-exports`` / ``capture-exports``: module globs → module-level names bound to model
    classes (sglang's ``EntryClass``) whose ``forward`` runs compiled / captured.
    ``export-forward-parameters``: module globs → the names of the arguments the framework's
    runner hands an exported class's ``forward`` (sglang's ``forward_batch``): a class of those
    modules whose ``forward`` has no parameter of one of them (nor ``*args`` / ``**kwargs``) is
    not a model the runner runs (a vision tower exported beside its model) and is no root.
    ``dispatch``: class (dotted, globs) → methods an instance call runs besides ``forward``
    (vLLM's ``CustomOp`` → ``forward_oot``, ``forward_cuda``, ``forward_native``).
    ``not-dispatched``: class (dotted, globs) → methods its dispatch never picks on the devices
    graphlint checks for (CUDA and NPU graphs, or the ``platform`` checked where the key is in a
    ``platforms.<name>`` table: vLLM's ``forward_cpu``, ``forward_xpu``, ``forward_tpu``); a call
    of one on an instance of the class is not followed, whoever makes it.
    ``not-selected-keys``: dotted names (globs) of the keys of tables that the devices graphlint
    checks for never select: a dict display keyed by them (vLLM's kernel lists per platform,
    ``{PlatformEnum.CPU: [...], PlatformEnum.CUDA: [...]}`` indexed by the current platform)
    holds only its other entries.
    ``eager-backends``: dotted names of ``torch.compile`` backends that run the traced graph
    eagerly on the devices graphlint checks for, compiling no graph of their own (vLLM's
    ``current_platform.simple_compile_backend``, ``"eager"`` on vllm-ascend's NPU platform): a
    compile with one is never a nested compile (GL101).
    ``other-platform-modules``: module globs that hold only the code of platforms graphlint does
    not check (vLLM's CPU and XPU kernels, quantization methods and workers, reached through
    registries by name): no region enters their functions. A glob may name functions by their
    dotted names instead (``pkg.vision.RocmAttention.*``): the backend classes of other
    platforms in a module that holds every platform's.
    ``unavailable-modules``: modules (dotted names, each with its submodules) that cannot be
    imported on the platform checked, its install lacks them (sglang's ``sgl_kernel`` and
    ``flashinfer`` on an NPU; in a ``platforms.<name>`` table): a module whose top-level import
    statements (not under ``if``, ``try`` or ``with``) import one, or a project module that
    cannot be imported, or whose package cannot, cannot be imported either, and no region enters
    its functions, as for ``other-platform-modules``; ``check`` counts them.
    ``outside-regions``: functions, by dotted name with globs, that the framework runs only
    outside every compiled and captured region: it prepares what they compute before a forward
    and hands it in (vLLM's DP batch agreement, ``coordinate_batch_across_dp``), or turns
    compilation and graphs off wherever they run (vLLM's 8-bit bitsandbytes matmul). No region
    enters them, as for ``other-platform-modules``; the preset says why for each.
    ``outside-captures``: the same for capture regions only: functions no graph capture of the
    framework runs, which may still run compiled (sglang's vision attention backends that its ViT
    graph runners refuse: they capture only with the backend the server arguments name).
    ``capture-false-calls``: calls, as written (dotted globs; the head resolved through the
    file's imports), that are false in every graph capture the framework makes, when called with
    no arguments (sglang's ``forward_batch.contains_mm_inputs()``: a capture batch holds no
    multimodal inputs): the branch an ``if`` on one never takes under capture is no capture
    region, its calls are not followed by a capture and its sites are not capture findings; a
    compiled region still takes it. ``capture-true-calls``: the same for calls that are true in
    every capture (sglang's ``get_is_capture_mode()``). An entry that ends in ``(...)`` takes a
    call with any arguments (sglang's ``can_cp_split(...)``, false for every decode-like batch).
    A module-level ``if`` they decide against every capture mode binds nothing in every region:
    a module's top level runs once, at import, on the platform checked (sglang's ``if _is_npu:
    f = f_npu`` / ``else: f = f_native``: a call of ``f`` runs ``f_npu`` only).
    ``capture-false-attributes`` / ``capture-none-attributes``: attributes, as read (dotted
    globs), that are False / None in every capture (sglang's ``forward_batch.return_logprob``,
    ``forward_batch.attn_cp_metadata``): tests on them (``if x:``, ``not x``, ``x is None``)
    are decided the same way, and a block that surely uses a None one as None cannot be used
    (``x[i]``, ``x.attr``, ``x > 0``, ``for _ in x``) raises there: it is not captured.
    ``capture-mode-none-attributes`` / ``capture-mode-true-attributes``: the same per mode,
    attributes → the modes they are None / true (a non-empty list) in, where the runners that
    capture in a mode build their batch so (sglang's ``forward_batch.extend_seq_lens_cpu``: None
    in TARGET_VERIFY, a list in DRAFT_EXTEND_V2); in the other modes they are unknown.
    ``capture-device-attributes``: attributes, as read, that hold a tensor on the capture's device
    in every capture (what the framework's capture metadata init stores: sglang's Ascend
    ``get_attn_backend().forward_metadata.actual_seq_lengths_q``; read off a call's result, the
    callee is written with ``()``): ``x is None`` is false there, and ``x.to(d)`` (or of a name
    bound to one) copies nothing in a capture. ``capture-modes``: the modes a capture runs in (sglang's forward
    modes), and ``capture-mode-calls``: calls (dotted globs, no arguments) → the modes they are
    true in (``forward_mode.is_decode_or_idle`` → ``DECODE``, ``IDLE``). A test is then decided
    per mode: ``is_decode_or_idle() or is_target_verify()`` is true in every capture although
    neither alone is, an ``elif`` sees only the modes the tests above it left, and after
    ``if ...: return`` the rest of the block runs only in the modes the test is false in (none:
    the rest is not captured). ``capture-call-results``: calls (dotted globs, as for
    ``capture-false-calls``) → the values (dotted names, as the file's imports spell them) they
    may return in a capture (the methods sglang's DeepSeek attention handlers pick there:
    ``AttnForwardMethod.MLA_NPU``, never ``MHA_NPU``): a test ``x == E.M`` of the call, or of a
    name bound to it, is false where ``E.M`` is another member of the class of those values,
    and so is one of such a value carried to a callee in a tuple (``return None, m`` in the
    helper, ``_, m = p`` in the callee its result is handed to). ``capture-false-tests``:
    functions, as their file names them (``Class.method``, dotted globs) → comparisons, as
    written (whitespace aside), that are false in every capture there (sglang's
    ``hidden_states.shape[0] == 0`` in DeepSeek's ``forward_prepare``: no runner captures an
    empty batch), decided as ``capture-false-calls`` are.
    ``empty-of-empty-calls``: calls (dotted globs, any arguments) whose result is empty where
    their first argument is an empty list (sglang's ``flatten_nested_list``): a list built from
    what is empty in every capture (a list display or comprehension, ``list(...)``,
    ``sorted(...)``) stays empty through them.
    ``platform-raising-calls``: calls, by qualified name (dotted globs; the head resolved through
    the file's imports, absolute ones only), that raise whatever their arguments on the platform
    checked (in a ``platforms.<name>`` table: sglang's JIT MoE alignment kernel, which builds CUDA
    sources, on the NPU): a block that surely makes one, outside a ``try`` of its function,
    raises there, as for a name bound only on other platforms (``raising_blocks.py``), so what
    follows it is not captured, nor what a caller runs after a function whose every way out
    makes one.
    ``device-built-classes``: classes (dotted, globs) the framework's loader builds under ``with
    torch.device(target)`` (sglang's and vLLM's ``load_model``): what runs only while it builds
    one of them (their ``__init__`` and what it calls, unless something else calls it too) makes
    its tensors without ``device=`` on the target, so ``.to(x.device)`` of a plain tensor
    attribute made there (``self.ids = torch.tensor(ids)``) copies nothing; one made with
    ``device="cpu"`` stays on the host.
    ``device-returns``: functions (dotted globs) → the parameter on whose device every tensor
    they return is made, where their returns come from code graphlint cannot read (kernels,
    dispatchers: sglang's MoE layers' ``forward`` and ``hidden_states``); it stands in for the
    walk's own summary (``returned_devices.py``) where that is unknown, so ``y = self.experts(h,
    topk)`` … ``r.to(y.device)`` of an ``r`` made on ``h``'s device copies nothing."""

    compile_entrypoints: tuple[str, ...] = ()
    capture_entrypoints: tuple[str, ...] = ()
    nesting_safe_entrypoints: tuple[str, ...] = ()
    replaced_entrypoints: tuple[str, ...] = ()
    compile_roots: tuple[str, ...] = ()
    capture_roots: tuple[str, ...] = ()
    compile_exports: dict[str, tuple[str, ...]] = field(default_factory=dict)
    capture_exports: dict[str, tuple[str, ...]] = field(default_factory=dict)
    export_forward_parameters: dict[str, tuple[str, ...]] = field(default_factory=dict)
    dispatch: dict[str, tuple[str, ...]] = field(default_factory=dict)
    not_dispatched: dict[str, tuple[str, ...]] = field(default_factory=dict)
    not_selected_keys: tuple[str, ...] = ()
    eager_backends: tuple[str, ...] = ()
    other_platform_modules: tuple[str, ...] = ()
    unavailable_modules: tuple[str, ...] = ()
    outside_regions: tuple[str, ...] = ()
    outside_captures: tuple[str, ...] = ()
    capture_false_calls: tuple[str, ...] = ()
    capture_true_calls: tuple[str, ...] = ()
    capture_false_attributes: tuple[str, ...] = ()
    capture_none_attributes: tuple[str, ...] = ()
    capture_device_attributes: tuple[str, ...] = ()
    capture_modes: tuple[str, ...] = ()
    capture_mode_calls: dict[str, tuple[str, ...]] = field(default_factory=dict)
    capture_call_results: dict[str, tuple[str, ...]] = field(default_factory=dict)
    capture_false_tests: dict[str, tuple[str, ...]] = field(default_factory=dict)
    capture_mode_none_attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    capture_mode_true_attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    empty_of_empty_calls: tuple[str, ...] = ()
    device_built_classes: tuple[str, ...] = ()
    device_returns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    platform_raising_calls: tuple[str, ...] = ()

    def merged(self, other: "Knowledge") -> "Knowledge":
        values: dict[str, Any] = {}
        for key in KNOWLEDGE_LIST_KEYS:
            name = key.replace("-", "_")
            values[name] = tuple(dict.fromkeys((*getattr(self, name), *getattr(other, name))))
        for key in KNOWLEDGE_TABLE_KEYS:
            name = key.replace("-", "_")
            table = {k: tuple(v) for k, v in getattr(self, name).items()}
            for k, v in getattr(other, name).items():
                table[k] = tuple(dict.fromkeys((*table.get(k, ()), *v)))
            values[name] = table
        return Knowledge(**values)


KNOWLEDGE_LIST_KEYS = (
    "compile-entrypoints",
    "capture-entrypoints",
    "nesting-safe-entrypoints",
    "replaced-entrypoints",
    "compile-roots",
    "capture-roots",
    "not-selected-keys",
    "eager-backends",
    "other-platform-modules",
    "unavailable-modules",
    "outside-regions",
    "outside-captures",
    "capture-false-calls",
    "capture-true-calls",
    "capture-false-attributes",
    "capture-none-attributes",
    "capture-device-attributes",
    "capture-modes",
    "empty-of-empty-calls",
    "device-built-classes",
    "platform-raising-calls",
)
KNOWLEDGE_TABLE_KEYS = (
    "compile-exports",
    "capture-exports",
    "export-forward-parameters",
    "dispatch",
    "not-dispatched",
    "capture-mode-calls",
    "capture-call-results",
    "capture-false-tests",
    "capture-mode-none-attributes",
    "capture-mode-true-attributes",
    "device-returns",
)
KNOWLEDGE_KEYS = (*KNOWLEDGE_LIST_KEYS, *KNOWLEDGE_TABLE_KEYS)


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    presets: tuple[str, ...] | None = None  # None: the presets of the frameworks the project imports
    knowledge: Knowledge = field(default_factory=Knowledge)
    platform: str = DEFAULT_PLATFORM  # the device checked (``PLATFORMS``)
    platforms: dict[str, Knowledge] = field(default_factory=dict)  # platform → knowledge true only there
    src: tuple[str, ...] = ()  # the project's import roots, relative to the project root
    extra_paths: tuple[str, ...] = ()  # code outside the project it runs in: read, never reported
    # The call-site contexts of the value flow (per-call-site copies of small helpers, identity
    # layers' ``return args[0]``), once a preview, now on unless ``preview = false``: on vLLM
    # they reach 105 of 116 decoder layers with no false error (docs/callgraph.md "Call-site
    # contexts").
    preview: bool = True


_LIST_KEYS = ("select", "ignore", "exclude", "src", "extra-paths")


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` with a ``pyproject.toml`` or ``.git``."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        if (candidate / "pyproject.toml").is_file() or (candidate / ".git").exists():
            return candidate
    return directory


def load_config(root: Path) -> Config:
    """The ``[tool.graphlint]`` table of ``root/pyproject.toml`` (defaults when absent)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return Config()
    try:
        data = read_toml(pyproject)
    except (TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{pyproject}: {exc}") from exc
    table = data.get("tool", {}).get("graphlint", {})
    return parse_config(table, source=str(pyproject))


def parse_config(table: dict[str, Any], source: str = "[tool.graphlint]") -> Config:
    table = {key.replace("_", "-"): value for key, value in table.items()}
    known = {*_LIST_KEYS, "per-file-ignores", "presets", "preview", "platform", "platforms", *KNOWLEDGE_KEYS}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{source}: unknown [tool.graphlint] keys {unknown}; known: {sorted(known)}")
    values: dict[str, Any] = {}
    for key in _LIST_KEYS:
        values[key.replace("-", "_")] = _strings(table.get(key, []), key, source)
    values["per_file_ignores"] = _table(table.get("per-file-ignores", {}), "per-file-ignores", source)
    if "presets" in table:
        values["presets"] = _strings(table["presets"], "presets", source)
    if "preview" in table:
        if not isinstance(table["preview"], bool):
            raise ConfigError(f"{source}: [tool.graphlint] preview must be true or false, not {table['preview']!r}")
        values["preview"] = table["preview"]
    if "platform" in table:
        platform = table["platform"]
        if platform not in PLATFORMS:
            raise ConfigError(f"{source}: [tool.graphlint] platform must be one of {list(PLATFORMS)}, not {platform!r}")
        values["platform"] = platform
    values["knowledge"] = parse_knowledge(table, source)
    values["platforms"] = parse_platforms(table.get("platforms", {}), source)
    return Config(**values)


def parse_platforms(value: Any, source: str) -> dict[str, Knowledge]:
    """A ``platforms`` table (of ``[tool.graphlint]`` or of a preset): platform → the knowledge
    that holds only there. A platform graphlint does not check, or a key that is no knowledge
    key, is an error (a typo would silently state nothing)."""
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: platforms must be a table of platform = {{knowledge keys}}")
    platforms = {}
    for platform, table in value.items():
        if platform not in PLATFORMS:
            raise ConfigError(f"{source}: platforms.{platform}: no platform {platform!r}; known: {list(PLATFORMS)}")
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: platforms.{platform} must be a table of knowledge keys")
        unknown = sorted({key.replace("_", "-") for key in table} - set(KNOWLEDGE_KEYS))
        if unknown:
            known = sorted(KNOWLEDGE_KEYS)
            raise ConfigError(f"{source}: platforms.{platform}: unknown keys {unknown}; known: {known}")
        platforms[platform] = parse_knowledge(table, f"{source} platforms.{platform}")
    return platforms


def parse_knowledge(table: dict[str, Any], source: str) -> Knowledge:
    """The knowledge keys of a ``[tool.graphlint]`` table or of a preset file."""
    table = {key.replace("_", "-"): value for key, value in table.items()}
    values: dict[str, Any] = {}
    for key in KNOWLEDGE_LIST_KEYS:
        values[key.replace("-", "_")] = _strings(table.get(key, []), key, source)
    for key in KNOWLEDGE_TABLE_KEYS:
        values[key.replace("-", "_")] = _table(table.get(key, {}), key, source)
    return Knowledge(**values)


def _table(value: Any, key: str, source: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: {key} must be a table of name = [strings]")
    return {name: _strings(items, f"{key}.{name}", source) for name, items in value.items()}


def _strings(value: Any, key: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: {key} must be a list of strings")
    return tuple(value)
