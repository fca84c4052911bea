from __future__ import annotations

import builtins
from collections.abc import Iterable

from graphlint.checks.facts import EntryFacts, Ref
from graphlint.checks.link import FunctionKey, Project
from graphlint.checks.regions import EntryId, RegionHit, Regions
from graphlint.checks.rules.base import ProjectRule, ProjectSite, Severity, snippet


class RegionUnresolved(ProjectRule):
    """## What it does
    Says where a capture region is blind: a capture entry point whose target resolves to no
    function of the analysed code (`ACLGraphWrapper(self.model)` where `self.model` comes from a
    library), or a call made inside a capture block that graphlint cannot follow
    (`self.runnable(*args)` of a wrapper, a model passed in as a parameter). It names the call
    and the `[tool.graphlint]` key that would show graphlint what runs there. Info only: it never
    fails a run.

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
            region = RegionHit(entry_id, entry.kind, entry.traced, label, entry.dynamic, (entry.scope,))
            for ref in _unresolved(project, file, entry, index):
                yield ProjectSite(
                    entry.line,
                    1,
                    f"capture region not analysed: {_spelling(ref)} resolves to no analysed function; "
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
            from torch.nn.attention.flex_attention import create_block_mask

            create_block_mask_compiled = torch.compile(create_block_mask, mode="reduce-overhead")
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


_BUILTINS = frozenset(dir(builtins))


def _unresolved(project: Project, file: int, entry: EntryFacts, index: int) -> list[Ref]:
    """The refs of a capture entry that graphlint cannot follow: all its targets when none
    resolves; else, for a block, its calls that resolve to nothing and name a value of the
    project (``self.runnable``, a parameter), not a library's function."""
    imports = project.files[file].facts.imports
    if entry.targets:
        if any(project.resolve(file, ref) for ref in entry.targets):
            return []
        # A library's own function compiled for capture (torch's create_block_mask) is not the
        # project's to show: only a value of the project that resolves to nothing is.
        return [ref for ref in entry.targets if ref[0] not in ("call", "instance") or not _is_library_name(ref[1], imports)]
    found: list[Ref] = []
    for edge in project.function(FunctionKey(file, entry.scope)).calls:
        if edge.block != index or project.resolve(file, edge.ref) or edge.ref in found:
            continue
        if edge.ref[0] in ("call", "instance") and not _calls_a_value(edge.ref[1], imports):
            continue
        if edge.ref[0] in ("member", "member-result") and _is_library_name(edge.ref[1], imports):
            continue  # a method of what a library made (``torch.empty_like(x).copy_``)
        found.append(edge.ref)
    return found


def _is_library_name(dotted: str, imports: dict[str, str]) -> bool:
    head = dotted.split(".", 1)[0]
    return head in imports or head in _BUILTINS


def _calls_a_value(dotted: str, imports: dict[str, str]) -> bool:
    """Whether an unresolved call runs a value the project passed in (``model(x)``,
    ``model.forward(x)``) rather than a library's function (``torch.add``, an import), a
    builtin, or a method of a value (``static_x.add_(1)``: a tensor's, most likely)."""
    if _is_library_name(dotted, imports):
        return False
    rest = dotted.partition(".")[2]
    return not rest or rest.rsplit(".", 1)[-1] in ("forward", "__call__")


def _spelling(ref: Ref) -> str:
    kind = ref[0]
    if kind in ("member", "member-result"):
        return f"`self.{ref[2]}(...)` on {ref[1]}"
    return f"`{ref[1]}(...)`"
