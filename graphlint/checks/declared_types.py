"""A parameter annotated with tensor and plain value classes only holds what such a class can be.

The assignment graph is context-insensitive on plain functions: one node per parameter. Where one
wrong value gets into a tensor's path (a typed dict of model inputs read with ``inputs["x"]``, which
the walk writes as the container; a quantization config handed through one shared ``*args``), it
is handed on from layer to layer: every ``forward(self, hidden_states)`` returns what it was given,
and with vLLM on vllm-ascend's path ~90 such values travelled through every norm, linear and
rotary layer's ``forward`` (``RMSNorm.forward_native``'s return: 87 values, 1,457 successors), and
the solve spent its step budget there. The annotations say what those parameters hold: a
parameter annotated ``x: torch.Tensor``, ``residual: torch.Tensor | None``, ``eps: float`` (every
class named, ``apis.VALUE_CLASSES``, nothing subscripted) takes only values that can be one: host
tensors, the value classes themselves, instances of the project's classes that derive from one of
those, and any other outside name as the one outside value (declared-type filtering, as points-to
analyses for Java do with declared types). A parameter whose annotation is wider, partly unnamed
(``list[...]``, ``Callable[...]``) or names a project class is not filtered. Annotations that lie (a project object passed where ``torch.Tensor`` is
written) lose the calls made through it.
"""

from __future__ import annotations

from collections.abc import Iterable

from graphlint.checks.file_tables import per_file
from graphlint.checks import apis
from graphlint.checks.class_hierarchy import ClassHierarchy
from graphlint.checks.value_graph import EXTERNAL_VALUE, LinkedModule, Obj, ValueGraph

_CONTEXTS = "@#%"  # what a copy appends to a function's qualname (``receiver_copies.py``)


def _value_class(obj: Obj) -> bool:
    return obj[0] == "X" and (obj[1] in apis.VALUE_CLASSES or (obj[1].startswith("torch.") and obj[1].endswith("Tensor")))


class DeclaredTypes(ValueGraph):
    """The parameters typed as values, and what their nodes may take (a mixin of the solver)."""

    files: list[LinkedModule]
    classes: ClassHierarchy

    def variable(self, file: int, key: str) -> int:
        node = self.variables.get((file, key))
        if node is None:
            node = super().variable(file, key)
            typed = self.value_parameters[file]
            if typed and self.typed_key(file, key) in typed:
                self.typed.add(node)
        return node

    def typed_key(self, file: int, key: str) -> str:
        """The parameter a variable is (a copy's, ``A.f@3:B.x``, is ``A.f``'s ``x``; a function
        nested in a copy, ``A.f@3:B.inner.x``, is ``A.f.inner``'s)."""
        function, _, parameter = key.rpartition(".")
        cut = min((i for i in (function.find(c) for c in _CONTEXTS) if i >= 0), default=len(function))
        base, rest = function[:cut], function[cut:]
        defs = self.files[file].facts.flow.defs
        nested = next((f"{base}{rest[i:]}" for i, c in enumerate(rest) if c == "." and f"{base}{rest[i:]}" in defs), base)
        return f"{nested}.{parameter}"

    def typed_values(self, objects: Iterable[Obj]) -> list[Obj]:
        """What a parameter typed as values takes: host tensors, the value classes' instances,
        instances of project classes derived from one; any other outside name as the one outside
        value (a tensor is no ``torch.nn.Linear`` nor ``PretrainedConfig.rms_norm_eps``, and
        sixteen such names would travel through every layer before they collapse)."""
        kept = []
        for obj in objects:
            if obj[0] == "H" or _value_class(obj):
                kept.append(obj)
            elif obj[0] == "X":
                kept.append(EXTERNAL_VALUE)
            elif obj[0] == "I" and any(_value_class(base) for base in self.classes.mro(("C", obj[1], obj[2]))):
                kept.append(obj)
        return kept

    @per_file
    def value_parameters(self, file: int) -> frozenset[str]:
        """Per file, the parameters whose annotation names value classes only."""
        flow = self.files[file].facts.flow
        typed = set(flow.typed_parameters)
        named: dict[str, list[Obj]] = {}
        for target, value in flow.assigns:
            if value[0] == "n" and target[0] == "v" and target[1] in typed:
                named.setdefault(target[1], []).extend(self.classes.static(file, value[1]))
        return frozenset(key for key, classes in named.items() if classes and all(map(_value_class, classes)))
