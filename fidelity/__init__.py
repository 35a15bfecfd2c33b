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
    "__version__",
]
