"""Map an exception raised by a stage to a finding: kind, code, message, the user's line.

The real cause is found behind torch's wrappers first (``unwrap``). Dynamo's ``Unsupported``
raised out of a compile (``fullgraph``, or a recompile-limit hit under
``fail_on_recompile_limit_hit``) is a graph break and keeps its GBxxxx code.
"""

from __future__ import annotations

import re
import traceback

from graphlint.tracer.classify.codes import trace_code
from graphlint.tracer.classify.graph_break import classify_graph_break, summarise_reason
from graphlint.tracer.classify.unwrap import real_cause
from graphlint.tracer.findings import Finding, Layer
from graphlint.tracer.locate import user_line_of_exception

_MESSAGE_LIMIT = 600
# How allocators say that memory ran out: torch's CPU allocator ("DefaultCPUAllocator: can't
# allocate memory", also under --memory-limit) and the caching allocators ("CUDA out of memory",
# "NPU out of memory"); Python's own is MemoryError, torch's device one OutOfMemoryError.
_OUT_OF_MEMORY = re.compile(r"can't allocate memory|out of memory", re.IGNORECASE)


def finding_of_exception(
    exc: BaseException, *, stage: str, layer: Layer, user_files: set[str], default_kind: str
) -> Finding:
    """``default_kind`` is what an ordinary exception means in this stage ("model-error" in
    eager, "compile-error" in a compiling stage)."""
    cause = real_cause(exc)
    text = str(cause)
    kind, code, meaning = default_kind, trace_code(default_kind), None
    gb_type = getattr(cause, "gb_type", None)
    limit_hit = type(cause).__name__ == "FailOnRecompileLimitHit"
    # torch 2.6 raises UserError, a subclass of Unsupported, for a data-dependent branch
    unsupported = any(base.__name__ == "Unsupported" for base in type(cause).__mro__)
    if gb_type is not None or limit_hit or unsupported:
        code, meaning = classify_graph_break(text, gb_type)
        kind = "recompile-limit" if limit_hit or meaning == "recompile-limit" else "graph-break"
        text = summarise_reason(text)
    elif isinstance(cause, NotImplementedError):
        kind, code = "not-implemented", trace_code("not-implemented")
    elif isinstance(cause, MemoryError) or type(cause).__name__ == "OutOfMemoryError" or _OUT_OF_MEMORY.search(text):
        kind, code = "oom", trace_code("oom")
    where = user_line_of_exception(exc, user_files)
    message = f"{type(cause).__name__}: {text}".strip()
    if len(message) > _MESSAGE_LIMIT:
        message = message[:_MESSAGE_LIMIT] + " …"
    details = {
        "exception": type(cause).__name__,
        "wrapped_in": type(exc).__name__ if cause is not exc else None,
        "meaning": meaning,
        "traceback": "".join(traceback.format_exception(cause))[-4000:],
    }
    return Finding(
        layer=layer,
        stage=stage,
        kind=kind,
        message=message,
        code=code,
        file=where[0] if where else None,
        line=where[1] if where else None,
        details={k: v for k, v in details.items() if v is not None},
    )
