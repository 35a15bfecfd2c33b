"""One provider, one place: a :class:`Provider` descriptor holds what
differs between providers outside the wire format (aliases, dialects, URL
routes, fallback tokenizer, cache model and parameters, price key, client
profiles, the models ``fidelity report`` scores); detection, routing,
pricing, tokenizer defaults and cache model selection all read it. Adding a
provider: docs/architecture.md, "Adding a provider".

>>> from fidelity import providers
>>> providers.family("vertex_ai")
'gemini'
>>> providers.from_url("https://api.deepseek.com/chat/completions")
Endpoint(provider='deepseek', dialect='deepseek', rule='host api.deepseek.com', model=None, server_prompt='')
>>> providers.get("openai").tokenizer
'o200k_base'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from ._registry import Registry
from .errors import UnknownName

__all__ = [
    "Route",
    "Endpoint",
    "ReportSetup",
    "Provider",
    "register",
    "unregister",
    "get",
    "names",
    "family",
    "for_dialect",
    "places_host",
    "from_url",
    "placed_url",
    "report_setups",
    "all_providers",
]


@dataclass(frozen=True)
class Route:
    """URL evidence: a request to a host ending in ``host`` (empty: any
    host) whose path contains ``path`` (empty: any path) and matches the
    regular expression ``pattern`` (empty: no further condition) speaks
    ``dialect``. ``model``: a regular expression whose first group, searched
    in the URL-decoded path, is the model (Gemini ``models/NAME:``, Azure
    ``deployments/NAME/``, Bedrock ``model/ID/invoke``). Routes are tried most
    specific first (longest host, then longest path, then longest pattern).
    ``server_prompt``: why the billed prompt is not the body's (the server
    renders the body into a template it does not publish); replay shows such
    requests apart, like server-side tools."""

    host: str
    dialect: str
    path: str = ""
    pattern: str = ""
    model: str = ""
    server_prompt: str = ""


class Endpoint(NamedTuple):
    """What a URL says: the provider family, the dialect, the rule that
    matched, and the model named in the URL (``None`` when it names none)."""

    provider: str
    dialect: str
    rule: str
    model: str | None = None
    server_prompt: str = ""


@dataclass(frozen=True)
class ReportSetup:
    """One row group of ``fidelity report``: a dialect, the model its parent
    and children use, and the route-change variant's target model."""

    dialect: str
    model: str
    alt_model: str


def _frozen(m: Mapping[str, object] | None = None) -> Mapping[str, object]:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True)
class Provider:
    """Everything provider-specific outside the wire format.

    ``name`` is the family name used everywhere (cache model, prices,
    ``Request.route.provider``); ``aliases`` are other spellings that resolve
    to it. ``tokenizer`` is the fallback when the model name matches no
    tokenizer rule (``None``: the model name must decide, as for self-hosted
    engines). ``cache_model`` names an entry of :mod:`fidelity.cache` and
    ``cache_params`` its keyword arguments (engine settings such as a block
    size). ``price_key`` is the provider column of the price table
    (``None``: no list price, as for self-hosted engines). ``own_template``:
    it renders an OpenAI-shaped body with its own chat template, which it
    does not publish (a serving provider): every count is an estimate.
    """

    name: str
    title: str
    dialects: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    routes: tuple[Route, ...] = ()
    tokenizer: str | None = None
    cache_model: str | None = None
    cache_params: Mapping[str, object] = field(default_factory=_frozen)
    price_key: str | None = None
    client_profiles: tuple[str, ...] = ()
    report: tuple[ReportSetup, ...] = ()
    docs: str = ""
    own_template: bool = False


_PROVIDERS: Registry[Provider] = Registry("provider")


def register(provider: Provider) -> Provider:
    """Add (or replace) a provider descriptor; returns it."""
    _PROVIDERS.add(provider.name, provider, aliases=provider.aliases)
    return provider


def unregister(name: str) -> None:
    """Remove a provider descriptor (tests, plugins that swap one out)."""
    _PROVIDERS.remove(name)


def get(name: str) -> Provider:
    """The descriptor called ``name`` or one of its aliases."""
    return _PROVIDERS.get(name)


def names() -> list[str]:
    """Registered provider family names."""
    return sorted(_PROVIDERS.names())


def all_providers() -> list[Provider]:
    """Every registered descriptor, by name."""
    return [_PROVIDERS.get(n) for n in names()]


def family(name: str) -> str:
    """The family a provider name stands for (``vertex_ai`` -> ``gemini``).

    DeepSeek Harness writes provider ids such as ``deepseek-official``; any
    name that starts with a family name followed by ``-`` or ``_`` resolves
    to that family. :class:`UnknownName` when nothing matches."""
    try:
        return _PROVIDERS.canonical(name)
    except UnknownName:
        low = name.lower()
        for fam in _PROVIDERS.names():
            if low.startswith((fam + "-", fam + "_")):
                return fam
        raise


def for_dialect(dialect: str) -> Provider:
    """The provider a wire dialect sends to (``openai-chat`` -> openai)."""
    for p in all_providers():
        if dialect in p.dialects:
            return p
    known = [d for p in all_providers() for d in p.dialects]
    raise UnknownName("dialect", dialect, known)


def _routes() -> list[tuple[Route, Provider]]:
    pairs = [(r, p) for p in all_providers() for r in p.routes]
    pairs.sort(key=lambda rp: (-len(rp[0].host), -len(rp[0].path), -len(rp[0].pattern)))
    return pairs


def from_url(url: str) -> Endpoint | None:
    """The provider and dialect a request URL names, or ``None`` when no
    route matches (a local server, an unknown gateway)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if not host:
        return None
    path = unquote(parts.path)
    for route, prov in _routes():
        # a subdomain, or a regional prefix (us-east5-aiplatform.googleapis.com)
        if route.host and not (host == route.host or host.endswith(("." + route.host, "-" + route.host))):
            continue
        if route.path not in path or (route.pattern and not re.search(route.pattern, path)):
            continue
        rule = " ".join(x for x in (f"host {route.host}" if route.host else "",
                                    f"path {route.path}" if route.path else "",
                                    f"path ~ {route.pattern}" if route.pattern else "") if x)
        model = None
        if route.model:
            m = re.search(route.model, path)
            model = m.group(1) if m else None
        return Endpoint(prov.name, route.dialect, rule, model, route.server_prompt)
    return None


def placed_url(url: str | None) -> str | None:
    """The one rule for whose cache a *recorded* URL names: the URL itself
    when its host names a provider fidelity knows (its own API or a third
    party, :func:`from_url`), else ``None``, the dialect's own API.

    A URL whose host no route names (a loopback stand-in such as
    ``fidelity upstream``, an unknown gateway) says nothing about whose cache
    served the request; a route matched by its path alone (``/v1/messages``
    on any host) does not place the host either. ``diff``, ``replay``,
    ``scan``, ``tokens-check`` and the proxy all read a recorded URL through
    here; a user who means a third-party cache says so (``--endpoint``)."""
    return url if url and places_host(from_url(url)) else None


def places_host(endpoint: Endpoint | None) -> bool:
    """Did a route match ``endpoint`` by its host (not by its path alone)?
    (:func:`placed_url`'s rule, for a caller that has the endpoint.)"""
    return endpoint is not None and endpoint.rule.startswith("host ")


def report_setups() -> tuple[ReportSetup, ...]:
    """The dialects and models ``fidelity report`` scores by default, in
    registration order of the built-in providers."""
    return tuple(s for name in _BUILTIN_ORDER for s in get(name).report)


# --------------------------------------------------------------------------
# Built-in providers. Hosts: each provider's API reference (the base URL its
# official SDK uses); report models are rows of the bundled price table.

#: client profiles (fidelity.wire.profiles) of the OpenAI SDK, which also
#: talks to every OpenAI-compatible endpoint; the first is the default
_OPENAI_PROFILES = ("openai-python>=3", "openai-python<3", "openai-python<1")
_GEMINI_MODEL = r"/models/([^/:]+)"
_AZURE_DEPLOYMENT = r"/deployments/([^/]+)/"

_BUILTIN_ORDER = ("openai", "anthropic", "gemini", "deepseek", "dashscope", "vllm", "sglang")

#: why a Responses compaction request bills more than its body
_COMPACT = "OpenAI compacts the input with a compaction prompt it does not publish"

register(Provider(
    name="openai", title="OpenAI",
    dialects=("openai-chat", "openai-responses"),
    aliases=("azure", "azure_ai", "azure-openai", "text-completion-openai"),
    routes=(
        Route("api.openai.com", "openai-responses", "/responses"),
        # the compaction endpoint runs the model on the conversation with a
        # compaction prompt of OpenAI's (https://platform.openai.com/docs/api-reference/responses/compact)
        Route("api.openai.com", "openai-responses", "/responses/compact", server_prompt=_COMPACT),
        Route("api.openai.com", "openai-chat"),
        # Azure OpenAI: the deployment name stands for the model
        # (https://learn.microsoft.com/azure/ai-foundry/openai/reference)
        Route("openai.azure.com", "openai-responses", "/responses/compact", model=_AZURE_DEPLOYMENT,
              server_prompt=_COMPACT),
        Route("openai.azure.com", "openai-responses", "/responses", model=_AZURE_DEPLOYMENT),
        Route("openai.azure.com", "openai-chat", model=_AZURE_DEPLOYMENT),
        # Azure AI Foundry model inference (OpenAI-compatible chat)
        Route("services.ai.azure.com", "openai-responses", "/responses", model=_AZURE_DEPLOYMENT),
        Route("services.ai.azure.com", "openai-chat", model=_AZURE_DEPLOYMENT),
        Route("models.ai.azure.com", "openai-chat"),
        Route("inference.ai.azure.com", "openai-chat"),
    ),
    tokenizer="o200k_base", cache_model="openai", price_key="openai",
    report=(ReportSetup("openai-chat", "gpt-4.1", "gpt-4o-mini"),
            ReportSetup("openai-responses", "gpt-5", "gpt-5-mini")),
    client_profiles=_OPENAI_PROFILES,
))
register(Provider(
    name="anthropic", title="Anthropic",
    dialects=("anthropic-messages",),
    aliases=("claude",),
    routes=(
        Route("api.anthropic.com", "anthropic-messages"),
        # Claude on Amazon Bedrock, InvokeModel / InvokeModelWithResponseStream: an
        # Anthropic Messages body with "anthropic_version", the model in the URL
        # (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html)
        Route("amazonaws.com", "anthropic-messages", "/model/", pattern=r"anthropic\.[^/]*/invoke",
              model=r"/model/([^/]+)/invoke"),
        # Claude on Vertex AI: publishers/anthropic/models/NAME:rawPredict | :streamRawPredict
        # (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude)
        Route("aiplatform.googleapis.com", "anthropic-messages", "/publishers/anthropic/",
              model=r"/models/([^/:]+):"),
        # Claude in Azure AI Foundry (https://learn.microsoft.com/azure/ai-foundry/foundry-models/how-to/use-foundry-models-claude)
        Route("services.ai.azure.com", "anthropic-messages", "/anthropic/"),
        # any host: the Messages API path (a proxy, a gateway)
        Route("", "anthropic-messages", "/v1/messages"),
    ),
    tokenizer="claude-estimate", cache_model="anthropic", price_key="anthropic",
    report=(ReportSetup("anthropic-messages", "claude-sonnet-4-6", "claude-haiku-4-5"),),
    client_profiles=("anthropic-create", "anthropic-stream"),
))
register(Provider(
    name="gemini", title="Google Gemini",
    dialects=("gemini",),
    aliases=("google", "vertex_ai", "vertex_ai-language-models", "vertex", "google-genai"),
    routes=(
        # Gemini's OpenAI-compatible endpoint: a Chat Completions body, Gemini's
        # model, tokens and cache (https://ai.google.dev/gemini-api/docs/openai)
        Route("generativelanguage.googleapis.com", "openai-chat", "/openai/"),
        Route("generativelanguage.googleapis.com", "gemini", model=_GEMINI_MODEL),
        Route("aiplatform.googleapis.com", "gemini", model=_GEMINI_MODEL),
    ),
    tokenizer="gemini-estimate", cache_model="gemini", price_key="gemini",
    report=(ReportSetup("gemini", "gemini-2.5-pro", "gemini-2.5-flash"),),
    client_profiles=("google-genai", "gemini-rest"),
))
register(Provider(
    name="deepseek", title="DeepSeek",
    dialects=("deepseek",),
    routes=(
        Route("api.deepseek.com", "deepseek"),
        # DeepSeek's Anthropic-compatible endpoint speaks the Messages API but
        # is DeepSeek's cache and prices
        # (https://api-docs.deepseek.com/guides/anthropic_api).
        Route("api.deepseek.com", "anthropic-messages", "/anthropic"),
        # its Responses endpoint renders the items into DeepSeek's chat
        # template: a 53-token body with one tool bills 366 tokens, 256 of them
        # read from a cache no earlier request of the recording wrote
        # (recorded-usage/pydantic-ai test_deepseek_responses, 2026)
        Route("api.deepseek.com", "openai-responses", "/responses",
              server_prompt="DeepSeek renders Responses items into an unpublished template"),
    ),
    tokenizer="deepseek-v4", cache_model="deepseek", price_key="deepseek",
    report=(ReportSetup("deepseek", "deepseek-v4-flash", "deepseek-v4-pro"),),
    client_profiles=_OPENAI_PROFILES,
))
register(Provider(
    name="dashscope", title="Alibaba Cloud Model Studio (DashScope)",
    dialects=("dashscope",),
    aliases=("qwen", "alibaba", "aliyun"),
    routes=(
        # OpenAI-compatible mode (https://help.aliyun.com/zh/model-studio/compatibility-of-openai-with-dashscope)
        Route("aliyuncs.com", "dashscope"),
        Route("aliyuncs.com", "dashscope", "/compatible-mode/"),
        Route("aliyuncs.com", "openai-responses", "/compatible-mode/v1/responses"),
        # Anthropic-compatible endpoint (https://help.aliyun.com/zh/model-studio/anthropic-api-messages)
        Route("aliyuncs.com", "anthropic-messages", "/apps/anthropic"),
    ),
    tokenizer="qwen3", cache_model="dashscope", price_key="dashscope",
    report=(ReportSetup("dashscope", "qwen3-max", "qwen-plus"),),
    client_profiles=_OPENAI_PROFILES,
))
register(Provider(
    name="openrouter", title="OpenRouter (gateway)",
    aliases=("open_router",),
    routes=(
        # https://openrouter.ai/docs/api-reference/overview: /api/v1/chat/completions,
        # /api/v1/responses; the cache is the upstream provider's
        Route("openrouter.ai", "openai-chat", "/chat/completions"),
        Route("openrouter.ai", "openai-responses", "/responses"),
        Route("openrouter.ai", "anthropic-messages", "/messages"),
    ),
    tokenizer="o200k_base", cache_model="openai",
    client_profiles=_OPENAI_PROFILES,
))
#: OpenAI-compatible serving providers of other models, each its own cache,
#: whose rules it does not publish (OpenAI's stand in, as for OpenRouter):
#: name, title, aliases, hosts, the API base path, whether it serves the
#: Responses API too (each one's API reference)
_SERVING = (
    # https://console.groq.com/docs/openai, /docs/responses-api: https://api.groq.com/openai/v1
    ("groq", "Groq", (), ("api.groq.com",), "/openai/v1", True),
    # https://docs.mistral.ai/api/: https://api.mistral.ai/v1/chat/completions
    ("mistral", "Mistral AI", ("mistralai",), ("api.mistral.ai",), "/v1", False),
    # https://huggingface.co/docs/inference-providers/index: https://router.huggingface.co/v1
    # (and /PROVIDER/v1 for one serving provider)
    ("huggingface", "Hugging Face Inference Providers (router)", ("hf",), ("router.huggingface.co",), "", True),
    # https://docs.x.ai/docs/api-reference: https://api.x.ai/v1 (chat/completions, responses)
    ("xai", "xAI", ("x-ai",), ("api.x.ai",), "/v1", True),
    # https://platform.moonshot.ai/docs/api/chat: https://api.moonshot.ai/v1 (api.moonshot.cn in China)
    ("moonshot", "Moonshot AI", ("moonshotai",), ("api.moonshot.ai", "api.moonshot.cn"), "/v1", False),
    # https://docs.together.ai/reference/chat-completions-1: https://api.together.xyz/v1
    ("together", "Together AI", ("together_ai",), ("api.together.xyz",), "/v1", False),
    # https://docs.fireworks.ai/api-reference/post-chatcompletions: https://api.fireworks.ai/inference/v1
    ("fireworks", "Fireworks AI", ("fireworks_ai",), ("api.fireworks.ai",), "/inference/v1", False),
    # https://inference-docs.cerebras.ai/api-reference/chat-completions: https://api.cerebras.ai/v1
    ("cerebras", "Cerebras", (), ("api.cerebras.ai",), "/v1", False),
    # https://deepinfra.com/docs/openai_api: https://api.deepinfra.com/v1/openai
    ("deepinfra", "DeepInfra", (), ("api.deepinfra.com",), "/v1/openai", False),
)
for _name, _title, _aliases, _hosts, _base, _responses in _SERVING:
    _apis = (("openai-chat", "/chat/completions"),) + ((("openai-responses", "/responses"),) if _responses else ())
    register(Provider(
        name=_name, title=f"{_title} (OpenAI-compatible serving)", aliases=_aliases,
        routes=tuple(Route(h, d, _base + p) for h in _hosts for d, p in _apis),
        cache_model="openai", client_profiles=_OPENAI_PROFILES, own_template=True,
    ))
register(Provider(
    name="bedrock", title="Amazon Bedrock (non-Anthropic models, Converse API)",
    aliases=("aws-bedrock", "bedrock_converse"),
    dialects=("bedrock-converse",),
    routes=(
        # Converse / ConverseStream (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
        # its own body shape, which fidelity does not render
        Route("amazonaws.com", "bedrock-converse", "/model/", pattern=r"/converse(-stream)?$",
              model=r"/model/([^/]+)/converse"),
        Route("amazonaws.com", "bedrock-invoke", "/model/", pattern=r"/invoke",
              model=r"/model/([^/]+)/invoke"),
    ),
))
register(Provider(
    name="vllm", title="vLLM (self-hosted)",
    dialects=("vllm",),
    cache_model="vllm",
    report=(ReportSetup("vllm", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B"),),
    client_profiles=_OPENAI_PROFILES,
))
register(Provider(
    name="sglang", title="SGLang (self-hosted)",
    dialects=("sglang",),
    cache_model="sglang",
    report=(ReportSetup("sglang", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B"),),
    client_profiles=_OPENAI_PROFILES,
))
register(Provider(
    name="llama.cpp", title="llama.cpp server (self-hosted)",
    aliases=("llamacpp", "llama-cpp"),
    cache_model="llama.cpp",
))
