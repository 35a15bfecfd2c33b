"""fidelity: verify prompt-cache fidelity of forked LLM subagents.

The pipeline runs one way: sources -> model -> fork / compose -> wire ->
diff -> tokens -> cache -> cost -> report / gate. See README.md.
"""

from .errors import FidelityError, ForkUnavailable, InputError, UnknownName
from .model import (
    FrozenDict,
    Image,
    Message,
    Reasoning,
    Request,
    Route,
    SystemBlock,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    freeze,
    thaw,
)

__version__ = "0.1.0"

#: re-exports imported on first use, so ``import fidelity`` stays light
_LAZY = {
    "compare": "fidelity.diff:compare",
    "compare_requests": "fidelity.diff:compare_requests",
    "DiffResult": "fidelity.diff:DiffResult",
    "record": "fidelity.capture:record",
    "Provider": "fidelity.providers:Provider",
}


def __getattr__(name: str) -> object:
    ref = _LAZY.get(name)
    if ref is None:
        raise AttributeError(f"module 'fidelity' has no attribute {name!r}")
    from ._registry import load_ref

    value = load_ref(ref)
    globals()[name] = value
    return value


__all__ = [
    "FidelityError",
    "ForkUnavailable",
    "InputError",
    "UnknownName",
    "FrozenDict",
    "Image",
    "Message",
    "Reasoning",
    "Request",
    "Route",
    "SystemBlock",
    "Text",
    "Tool",
    "ToolCall",
    "ToolResult",
    "freeze",
    "thaw",
    "compare",
    "compare_requests",
    "DiffResult",
    "record",
    "Provider",
    "__version__",
]
