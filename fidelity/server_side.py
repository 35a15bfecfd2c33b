"""Requests whose billed prompt holds what the request does not show.

A provider that runs tools itself, renders the body into a template it does
not publish, or keeps the conversation on its side bills prompt tokens that
no client can count from the request: comparing a prediction with the usage
such a request reported measures the provider's hidden input, not the
prediction. ``fidelity replay`` and ``fidelity scan`` set these requests
apart with the reason :func:`reason` gives.

* **server tools**: Anthropic's server tools (web search, web fetch, code
  execution: https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview)
  and OpenAI Responses' hosted tools (https://platform.openai.com/docs/guides/tools)
  run a tool loop inside one request, sampling several times and caching as
  they go, and the provider adds the tools' own definitions; so do
  Anthropic's tool search tool, which loads deferred tools' definitions into
  the prompt as it finds them
  (``tool_search_tool_regex_*`` / ``tool_search_tool_bm25_*``:
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool),
  and its advisor tool, whose sub-inference on another model reads the whole
  transcript and returns advice into the same response
  (``advisor_*``: https://platform.claude.com/docs/en/agents-and-tools/tool-use/advisor-tool);
  so do Gemini's
  built-in tools (``googleSearch``, ``urlContext``, ``codeExecution``:
  https://ai.google.dev/gemini-api/docs/url-context,
  https://ai.google.dev/gemini-api/docs/google-search); and remote MCP
  servers the provider calls itself, whose tool lists it fetches into the
  prompt (Anthropic's MCP connector, a ``mcp_servers`` body member and
  ``mcp_toolset`` tools: https://docs.claude.com/en/docs/agents-and-tools/mcp-connector;
  OpenAI Responses' ``mcp`` tool: https://platform.openai.com/docs/guides/tools-remote-mcp);
  web search run by the endpoint for a Chat Completions request (OpenAI's
  ``web_search_options``: https://platform.openai.com/docs/guides/tools-web-search?api-mode=chat;
  OpenRouter's ``web`` plugin or a model slug ending in ``:online``:
  https://openrouter.ai/docs/features/web-search), whose results the
  endpoint adds to the prompt; OpenRouter's server tools, any tool whose
  type has the ``openrouter:`` prefix (``openrouter:web_search``,
  ``openrouter:advisor``), which OpenRouter runs itself zero or more times
  in one request (https://openrouter.ai/docs/guides/features/server-tools);
  and OpenAI Responses' tool search (a ``tool_search`` tool, hosted or run by
  the client, and its ``tool_search_call`` / ``tool_search_output`` items:
  https://developers.openai.com/api/docs/guides/tools-tool-search), which
  bills its own definition and each deferred function (``defer_loading``)
  only once the model has found it;
* **provider tools**: tools the provider defines and the client runs
  (Anthropic's ``computer``, ``bash``, ``text_editor``:
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool),
  whose definitions the provider expands into instructions the body does not hold;
* **server template**: an endpoint that renders the body into an
  unpublished template (a route's ``server_prompt`` in :mod:`fidelity.providers`,
  such as OpenAI's ``/v1/responses/compact``, whose compaction prompt is
  OpenAI's: https://platform.openai.com/docs/api-reference/responses/compact),
  and request members that make OpenAI write part of the prompt itself:
  an ``additional_tools`` input item (tools a developer adds mid-conversation,
  rendered into the conversation in a form OpenAI does not publish:
  the API reference's ``AdditionalToolsItemParam``) and ``reasoning.mode:
  "pro"`` (GPT-5.6's multi-pass reasoning before one final answer:
  https://developers.openai.com/api/docs/guides/reasoning); and a request
  to OpenAI's Responses API made before :data:`RESPONSES_AS_TODAY` (its
  first weeks: launched 2025-03-11,
  https://openai.com/index/new-tools-for-building-agents/), which billed
  text around the input that it no longer bills (:func:`early_responses`);
* **server state**: ``previous_response_id`` / ``conversation`` (OpenAI
  Responses), ``context_management`` (Anthropic compaction or clearing),
  ``cachedContent`` (Gemini explicit caches): part of the prompt is held by
  the provider.

>>> reason({"tools": [{"type": "web_search_20250305", "name": "web_search"}]})
'server tools'
>>> reason({"contents": [], "tools": [{"urlContext": {}}]})
'server tools'
>>> reason({"model": "claude-sonnet-4-5", "messages": [], "mcp_servers": [{"type": "url", "url": "https://x"}]})
'server tools'
>>> reason({"model": "openai/gpt-4o", "messages": [], "plugins": [{"id": "web"}]})
'server tools'
>>> reason({"model": "openai/gpt-4.1-mini", "messages": [], "tools": [{"type": "openrouter:web_search"}]})
'server tools'
>>> reason({"model": "gpt-5.4", "input": "hi", "tools": [{"type": "tool_search"}]})
'server tools'
>>> reason({"model": "gpt-5.6-sol", "input": "hi", "reasoning": {"mode": "pro"}})
'server template'
>>> reason({"model": "gpt-5", "previous_response_id": "resp_1", "input": "hi"})
'server state'
>>> reason({"model": "gpt-5", "input": "hi"}) is None
True
"""

from __future__ import annotations

from typing import Any

__all__ = ["REASONS", "reason", "has_marks", "early_responses", "RESPONSES_AS_TODAY"]

#: 2025-04-07 00:00 UTC: the first recording seen billed as the API bills today. Before it, the same
#: bodies billed 18 tokens more on gpt-4o / gpt-4o-mini (simonw/llm-openai-plugin
#: tests/cassettes/test_openai/test_options*.yaml, 2025-03-21; pydantic-ai
#: test_openai_responses_system_prompt.yaml, 2025-03-27), 55 more on o3-mini and ~210 more
#: with tools; test_openai_responses_model_instructions.yaml (2025-04-07) bills as today
RESPONSES_AS_TODAY = 1743984000.0

#: the reasons :func:`reason` gives, in the order it checks them
REASONS = ("server tools", "provider tools", "server template", "server state")

#: tool ``type`` prefixes of provider-run (server) tools (sources in the module docstring)
_SERVER_TOOL_TYPES = ("web_search", "web_fetch", "code_execution", "code_interpreter", "file_search",
                      "image_generation", "mcp", "tool_search", "advisor_", "openrouter:")
#: Gemini tool members of built-in (server) tools, REST camelCase and SDK snake_case
_GEMINI_SERVER_TOOLS = ("googleSearch", "google_search", "googleSearchRetrieval", "google_search_retrieval",
                        "urlContext", "url_context", "codeExecution", "code_execution")
#: tool ``type`` prefixes of provider-defined tools the client runs
_PROVIDER_TOOL_TYPES = ("computer_", "bash_", "text_editor_", "memory_")
#: content blocks / items that carry a server tool's call or result
_SERVER_TOOL_MARKS = (b'"server_tool_use"', b'"web_search_call"', b'"code_interpreter_call"',
                      b'"file_search_call"', b'"image_generation_call"', b'"mcp_tool_use"', b'"mcp_call"',
                      b'"mcp_list_tools"', b'"tool_search_tool_result"', b'"advisor_tool_result"',
                      b'"tool_search_call"', b'"tool_search_output"')
#: body members naming remote MCP servers the provider calls (Anthropic's MCP connector)
_SERVER_TOOL_MEMBERS = ("mcp_servers",)
#: OpenRouter plugins that add to the prompt what they fetched
_SERVER_PLUGINS = ("web",)
#: body members whose value the provider resolves into prompt it holds
_STATE_MEMBERS = ("previous_response_id", "conversation", "context_management", "cachedContent")


def _server_tool_in(body: Any) -> bool:
    if isinstance(body, dict) and any(body.get(k) for k in _SERVER_TOOL_MEMBERS):
        return True
    if isinstance(body, dict) and (isinstance(body.get("web_search_options"), dict)  # {} turns it on
                                   or _plugin_in(body.get("plugins"))
                                   or (isinstance(body.get("model"), str) and body["model"].endswith(":online"))):
        return True
    tools = body.get("tools") if isinstance(body, dict) else None
    if not isinstance(tools, list):
        return False
    return any(isinstance(t, dict) and ((isinstance(t.get("type"), str) and t["type"].startswith(_SERVER_TOOL_TYPES))
                                        or any(k in t for k in _GEMINI_SERVER_TOOLS)) for t in tools)


def _template_in(body: Any) -> bool:
    """Whether a Responses body has OpenAI write part of the prompt: an
    ``additional_tools`` input item or ``reasoning.mode: "pro"`` (module docstring)."""
    if not isinstance(body, dict):
        return False
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("mode") == "pro":
        return True
    items = body.get("input")
    return isinstance(items, list) and any(isinstance(i, dict) and i.get("type") == "additional_tools" for i in items)


def _plugin_in(plugins: Any) -> bool:
    return isinstance(plugins, list) and any(isinstance(p, dict) and p.get("id") in _SERVER_PLUGINS for p in plugins)


def _provider_tool_in(body: Any) -> bool:
    tools = body.get("tools") if isinstance(body, dict) else None
    return isinstance(tools, list) and any(
        isinstance(t, dict) and isinstance(t.get("type"), str) and t["type"].startswith(_PROVIDER_TOOL_TYPES)
        for t in tools)


def has_marks(raw: bytes, skip: tuple[int, int] = (0, 0)) -> bool:
    """Whether ``raw`` holds a server tool's call or result, outside the
    span ``skip`` (bytes already searched elsewhere; it must start and end
    between JSON values, so that no mark runs across its ends)."""
    a, b = skip
    if b <= a:
        return any(m in raw for m in _SERVER_TOOL_MARKS)
    return any(raw.find(m, 0, a) >= 0 or raw.find(m, b) >= 0 for m in _SERVER_TOOL_MARKS)


def reason(body: Any, raw: bytes | None = None, server_prompt: str = "", marks: bool | None = None, *,
           dialect: str | None = None, provider: str | None = None, when: float | None = None) -> str | None:
    """Why the billed prompt of a request holds what its body does not
    (one of :data:`REASONS`), or ``None``. ``body``: the parsed body;
    ``raw``: bytes to look for server tool calls and results in (the body's,
    or a whole log line with its response), or ``marks``: whether they hold
    one (:func:`has_marks`); ``server_prompt``: the endpoint's
    (:attr:`fidelity.providers.Endpoint.server_prompt`); ``dialect``,
    ``provider`` and ``when`` (epoch seconds): a Responses request of the
    launch weeks (:func:`early_responses`) is "server template" too."""
    if marks is None:
        marks = raw is not None and has_marks(raw)
    if marks or _server_tool_in(body):
        return "server tools"
    if _provider_tool_in(body):
        return "provider tools"
    if server_prompt or _template_in(body):
        return "server template"
    if isinstance(body, dict) and any(body.get(k) for k in _STATE_MEMBERS):
        return "server state"
    return "server template" if early_responses(dialect, provider, when) else None


def early_responses(dialect: str | None, provider: str | None, when: float | None) -> bool:
    """Whether a request to OpenAI's own Responses API was made before
    :data:`RESPONSES_AS_TODAY` (``when``: epoch seconds, ``None``: not known)."""
    return dialect == "openai-responses" and provider in (None, "openai") and when is not None \
        and when < RESPONSES_AS_TODAY
