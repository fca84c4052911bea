from __future__ import annotations

import re
from collections.abc import Iterable

from graphlint.checks import apis
from graphlint.checks.facts import MODULE_SCOPE, EntryFacts
from graphlint.checks.link import Project
from graphlint.checks.value_graph import FunctionKey
from graphlint.checks.regions import ChainStep, EntryId, RegionHit, Regions
from graphlint.checks.rules.base import ProjectRule, ProjectSite, Severity, snippet


class RegionUnresolved(ProjectRule):
    """## What it does
    Says where a capture region is blind: a capture entry point whose target resolves to no
    function of the analysed code (`ACLGraphWrapper(self.model)` where `self.model` comes from a
    library), or a call made inside a capture block that graphlint cannot follow
    (`self.runnable(*args)` of a wrapper, a model passed in as a parameter). It names the call
    and the `[tool.graphlint]` key that would show graphlint what runs there. A container's own
    method (`self.segments.append(graph)`, `self.graphs.get(key)`) runs nothing and is not
    named, nor is a capture in a private function (`_name`) that nothing in the project runs: its
    name is spelled only in `def`s and in calls resolved to other functions (a graph runner's
    override that its base class no longer calls).
    It also names the capture blocks of a framework's own code that are not analysed
    because the framework's preset ships opt-in and is off (as sglang's did: without the
    preset's knowledge of what a capture never runs, most findings in its graph runners were false). Info only:
    it never fails a run.

    ## Why is this bad?
    The capture rules (GL201–GL203) only see code the region walk reaches. When the captured
    code is out of sight, a clean result means "not looked at", not "safe": the host↔device
    copies and syncs that abort capture ("Not allow to sync captured-stream") may sit right
    there (layer: capture).

    ## Example
    ```python
    class GraphWrapper:
        def __init__(self, runnable):
            self.runnable = runnable

        def __call__(self, *args):
            with torch.npu.graph(self.graph):
                return self.runnable(*args)
    ```

    ## Use instead
    Name what runs there: `capture-roots = ["mypkg.models.*.*ForCausalLM.forward"]`, or the
    wrapper as `capture-entrypoints = ["mypkg.graphs.GraphWrapper"]` where it is constructed
    with the model, or enable the framework's preset (`presets = ["vllm_ascend"]`).

    ## Fix safety
    No automatic fix.

    ## References
    torchair#236
    """

    code = "GL001"
    slug = "region-unresolved"
    summary = "a capture entry reaches nothing, or calls what graphlint cannot resolve"
    message = "capture region not analysed"
    default_severity: Severity = "info"
    regions = frozenset({"capture"})
    traced_only = False
    refs = ("torchair#236",)

    def judge(self, project: Project, regions: Regions, file: int) -> Iterable[ProjectSite]:
        linked = project.files[file]
        for index, entry in enumerate(linked.facts.entries):
            if entry.kind != "capture":
                continue
            entry_id = EntryId(file, index)
            label = f"{linked.display}:{entry.line}"
            region = RegionHit(
                entry_id, entry.kind, entry.traced, label, entry.dynamic, (ChainStep(entry.scope, linked.display, entry.line),)
            )
            preset = regions.held.get(entry_id)
            if preset is not None:
                yield ProjectSite(
                    entry.line,
                    1,
                    f"capture region not analysed: a capture of {preset}'s own code, whose findings are not "
                    f"precise enough without its preset; turn it on with presets = [\"{preset}\"] in [tool.graphlint]",
                    region,
                )
                continue
            unresolved = _unresolved(project, file, entry, index)
            if unresolved and _never_named(project, file, entry.scope):
                continue  # dead code: nothing is blind there
            for spelled in unresolved:
                yield ProjectSite(
                    entry.line,
                    1,
                    f"capture region not analysed: {spelled} resolves to no analysed function; "
                    "name what it runs with capture-roots (or capture-entrypoints, presets) in [tool.graphlint]",
                    region,
                )

    VALID = [
        snippet("""
            import torch
            from torch import nn

            class Block(nn.Module):
                def forward(self, x):
                    return x * 2

            def run(g, static_x):
                block = Block()
                buffer = torch.empty_like(static_x)
                with torch.npu.graph(g):
                    out = block(static_x)
                    static_x.add_(1)
                    buffer.copy_(out)
                return buffer
        """),
        snippet("""
            import torch

            def step(x):
                return x + 1

            fast = torch.compile(step, mode="reduce-overhead")
        """),
        snippet("""
            import torch

            def run(g, static_x, model):
                compiled = torch.compile(model)
                return compiled(static_x)
        """),
        snippet("""
            import torch

            class SegmentedCapture:
                def __init__(self, holder, pool):
                    self.holder = holder
                    self.pool = pool

                def begin(self):
                    graph = torch.cuda.CUDAGraph()
                    graph.capture_begin(pool=self.pool)
                    self.holder.segments.append(graph)
        """),
        snippet("""
            import torch
            from torch.nn.attention.flex_attention import create_block_mask

            create_block_mask_compiled = torch.compile(create_block_mask, mode="reduce-overhead")
        """),
        snippet("""
            import torch

            class NPUGraphRunner:
                def _capture_graph(self, graph, run_once_fn):
                    with torch.npu.graph(graph):
                        return run_once_fn()
        """),
    ]
    INVALID = [
        snippet("""
            import torch

            class GraphWrapper:
                def __init__(self, runnable):
                    self.runnable = runnable
                    self.graph = torch.npu.NPUGraph()

                def __call__(self, *args):
                    with torch.npu.graph(self.graph):  # error
                        return self.runnable(*args)
        """),
        snippet("""
            import torch

            def capture(g, model, static_x):
                with torch.cuda.graph(g):  # error
                    return model(static_x)
        """),
        snippet("""
            import torch
            from serving_lib import load_model

            model = load_model("llama")
            fast = torch.compile(model, mode="reduce-overhead")  # error
        """),
    ]


# What the value flow reads as a container's own store or read (``flow_expressions.py``): a call
# through one runs nothing of the project's, whatever its receiver holds.
_CONTAINER_METHODS = apis.CONTAINER_STORE_METHODS | apis.CONTAINER_READ_METHODS


def _never_named(project: Project, file: int, scope: str) -> bool:
    """Whether ``scope`` is a private function or method (``_name``, no dunder) that nothing in the
    project runs: each place a file spells its name is a ``def`` of that name or a call the value
    flow resolves, to other functions only (no reference, string or ``getattr`` of it), and a
    private name is not called from outside the project."""
    name = scope.rpartition(".")[2]
    if scope == MODULE_SCOPE or not name.startswith("_") or name.endswith("__"):
        return False
    key = FunctionKey(file, scope)
    accounted = 0
    for index, linked in enumerate(project.files):
        accounted += sum(1 for qualname in linked.facts.flow.defs if qualname.rpartition(".")[2] == name)
        for ordinal, site in enumerate(linked.facts.flow.calls):
            if site is None or site.text.rpartition(".")[2] != name:
                continue
            if not project.resolved(index, ordinal) or key in project.runs(index, ordinal):
                return False
            accounted += 1
    spelled = re.compile(rb"\b%s\b" % re.escape(name.encode()))
    seen = 0
    for linked in project.files:
        try:
            seen += len(spelled.findall(linked.path.read_bytes()))
        except OSError:
            return False
        if seen > accounted:
            return False
    return seen == accounted


def _unresolved(project: Project, file: int, entry: EntryFacts, index: int) -> list[str]:
    """What a capture entry runs that graphlint cannot follow, as written: its targets when none
    resolves to a function; else, for a block, its calls written as a name or an attribute of
    ``self`` (``self.runnable``, a parameter) whose callee holds no value at all."""
    if entry.targets:
        # A library's own function compiled for capture (torch's create_block_mask) is not the
        # project's to show: only a value of the project that resolves to nothing is.
        if project.entry_functions(file, index) or project.entry_outside_names(file, index):
            return []
        return ["what it is handed"]
    found: list[str] = []
    block_calls = project.files[file].facts.block_calls
    for ordinal in project.calls_in(FunctionKey(file, entry.scope)):
        site = project.site(file, ordinal)
        if block_calls.get(ordinal) != index or site is None or not site.named or project.resolved(file, ordinal):
            continue
        if site.text.rpartition(".")[2] in _CONTAINER_METHODS and "." in site.text:
            continue  # `self.segments.append(graph)`: the value flow's container store, no runnable
        spelled = f"`{site.text}(...)`"
        if site.text.startswith("self.") and "." in entry.scope:  # the wrapper it is a member of
            spelled += f" on {entry.scope.rsplit('.', 1)[0]}"
        if spelled not in found:
            found.append(spelled)
    return found
