"""Find the real cause inside the exceptions torch wraps around it.

``BackendCompilerFailed`` keeps it in ``inner_exception``; ``TorchRuntimeError``,
``InternalTorchDynamoError`` and ``TorchDynamoException`` subclasses chain it as ``__cause__``.
Dynamo's ``Unsupported`` (a graph break) is a cause in its own right and is not unwrapped.
"""

from __future__ import annotations

WRAPPER_NAMES = frozenset(
    {
        "BackendCompilerFailed",
        "TorchRuntimeError",
        "InternalTorchDynamoError",
        "ShortenTraceback",
        "UncapturedHigherOrderOpError",
    }
)


def real_cause(exc: BaseException) -> BaseException:
    """The innermost exception behind torch's wrappers (``exc`` itself when not wrapped)."""
    seen: set[int] = set()
    while type(exc).__name__ in WRAPPER_NAMES and id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "inner_exception", None) or exc.__cause__
        if inner is None:
            break
        exc = inner
    return exc
