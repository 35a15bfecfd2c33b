"""``fidelity upstream``: a scripted fake of the OpenAI Chat Completions and
Responses, Anthropic Messages and Gemini APIs: each request is answered from a
:class:`~fidelity.proxy.script.Script`, JSON or SSE as asked, with usage
predicted by fidelity. Routes: docs/proxy.md. Wire shapes: https://platform.openai.com/docs/api-reference/chat ,
https://platform.openai.com/docs/api-reference/responses-streaming ,
https://platform.claude.com/docs/en/build-with-claude/streaming ,
https://ai.google.dev/api/generate-content ."""

from __future__ import annotations

import asyncio
import itertools
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import FidelityError
from ..jsonio import atomic_write
from ..wire.evidence import dialect_of_path, route
from . import _store
from ._guard import ConnectionGuard, FailureLog
from ._listen import listen
from .parent import ParentIndex, Seen, judge, prompt_tokens, view_digests
from .script import Reply, RequestView, Script

__all__ = ["ScriptedUpstream", "Received"]


@dataclass(frozen=True)
class Received:
    """One request as the upstream received it (for byte-identity checks)."""

    seq: int
    method: str
    path_qs: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    rule: str


@dataclass(frozen=True)
class _Figures:
    prompt: int
    cached: int
    written: int
    output: int


class ScriptedUpstream:
    """The fake provider. ``endpoint``: whose cache rules the usage follows
    (a URL; ``None``: each provider's own API). ``usage``: ``"predict"``
    (fidelity's cache model) or ``"zero"`` (no cached tokens, cheap: no
    tokenizer runs). ``save``: a folder to write each received body into."""

    def __init__(self, script: Script, *, endpoint: str | None = None, usage: str = "predict",
                 save: str | Path | None = None, keep: int = 1000, header_timeout: float = 30.0,
                 max_connections: int | None = None, log: Callable[[str], None] | None = None) -> None:
        if usage not in ("predict", "zero"):
            raise FidelityError(f"usage must be predict or zero, not {usage!r}")
        self.script = script
        self.endpoint = endpoint
        self.usage = usage
        self.save = Path(save) if save is not None else None
        self.received: deque[Received] = deque(maxlen=keep)
        self._index = ParentIndex()
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        self.failures = FailureLog(log or (lambda s: print(s, file=sys.stderr, flush=True)))
        self.guard = ConnectionGuard(max_connections=max_connections, header_timeout=header_timeout,
                                     log=self.failures)
        self._runner: Any = None
        self.port: int | None = None

    # -- lifecycle ------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        from aiohttp import web

        if self.save is not None:  # a folder it cannot write fails here, not as a 500 on every request
            _store.check_writable(self.save, "request bodies (--save)")
        app = web.Application(client_max_size=256 << 20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
        self.port = await listen(self._runner, host, port, guard=self.guard)
        return self.port

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.failures.flush()

    # -- requests -------------------------------------------------------------
    async def _handle(self, request: Any) -> Any:
        with self.guard.active(request.transport):
            return await self._reply(request)

    async def _reply(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.read()
        seq = next(self._seq)
        path = request.path
        kind = dialect_of_path(path)
        if request.method == "GET" and path.rstrip("/").endswith("/models"):
            self._remember(seq, request, body, "models")
            return web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model",
                                                                  "owned_by": "fidelity"}]})
        if request.method != "POST" or kind is None:
            self._remember(seq, request, body, "not-found")
            return web.json_response({"error": {"type": "not_found", "message": f"fidelity upstream serves no "
                                                f"{request.method} {path}"}}, status=404)
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            self._remember(seq, request, body, "bad-json")
            return web.json_response({"error": {"type": "invalid_request_error", "message": "body is not JSON"}},
                                     status=400)
        model = obj.get("model") if isinstance(obj, dict) and isinstance(obj.get("model"), str) else None
        if kind == "gemini":
            model = path.rsplit("/models/", 1)[-1].split(":", 1)[0]
        loop = asyncio.get_running_loop()
        if kind == "anthropic-count":
            self._remember(seq, request, body, "count_tokens")
            n = await loop.run_in_executor(None, self._count, body, "anthropic-messages", model)
            return web.json_response({"input_tokens": n})
        # the cache rules the figures follow: the dialect the proxy files this request under
        cache_dialect = route(obj, str(request.url))[0] or kind
        view = RequestView(kind, model, path, body, obj)
        rule, reply = self.script.reply_for(view)
        self._remember(seq, request, body, rule)
        if reply.error is not None or reply.status >= 400:
            return web.json_response({"type": "error", "error": {"type": "scripted_error",
                                                                 "message": reply.error or "scripted failure"}},
                                     status=reply.status if reply.status >= 400 else 500)
        figures = await loop.run_in_executor(None, self._figures, seq, cache_dialect, body, model, reply)
        stream = reply.stream if reply.stream is not None else _wants_stream(kind, obj, request)
        render = _RENDERERS[kind]
        if stream and kind == "gemini" and request.query.get("alt") != "sse":  # a JSON array of chunks
            return web.Response(body=orjson.dumps([render.whole(seq, model, reply, figures)]),
                                content_type="application/json")
        if not stream:
            return web.Response(body=orjson.dumps(render.whole(seq, model, reply, figures)),
                                content_type="application/json")
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        first = True
        async for event in render.events(seq, model, reply, figures):
            if not first and reply.event_delay_s:
                await asyncio.sleep(reply.event_delay_s)
            first = False
            await resp.write(event)
        if kind == "openai-chat":
            await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    def _remember(self, seq: int, request: Any, body: bytes, rule: str) -> None:
        self.received.append(Received(seq, request.method, request.path_qs, tuple(request.headers.items()), body, rule))
        if self.save is not None and body:
            try:
                atomic_write(self.save / f"{seq:04d}.body", body)
            except OSError as exc:  # the folder went away or filled up after start: say so, keep answering
                self.failures.note("body not saved", f"{self.save}: {exc.strerror or exc}")

    def _count(self, body: bytes, dialect: str, model: str | None) -> int:
        try:
            return prompt_tokens(body, dialect, model, self.endpoint)
        except Exception:
            return max(1, len(body) // 4)

    def _figures(self, seq: int, dialect: str, body: bytes, model: str | None, reply: Reply) -> _Figures:
        output = max(1, (len(reply.text or "") + sum(len(orjson.dumps(c.arguments)) for c in reply.tool_calls)) // 4)
        if self.usage == "zero":
            return _Figures(max(1, len(body) // 4), 0, 0, output)
        prompt = self._count(body, dialect, model)
        cached = written = 0
        name = f"{seq:06d}"
        digests, first = view_digests(dialect, body, self.endpoint)
        if digests:
            with self._lock:  # requests are predicted concurrently: index and bodies change together
                parent = self._index.observe(Seen(name, dialect, model, None, digests, first))
                self._bodies[name] = body
                while len(self._bodies) > 256:
                    self._bodies.popitem(last=False)
                parent_body = self._bodies.get(parent.name) if parent is not None else None
            if parent_body is not None:
                try:
                    v = judge(parent_body, body, dialect, model=model, endpoint=self.endpoint)
                    cached, written = v.predicted_cached, v.predicted_written
                except FidelityError:
                    pass
        return _Figures(prompt, min(cached, prompt), written, output)


def _wants_stream(kind: str, obj: Any, request: Any) -> bool:
    if kind == "gemini":
        return ":streamGenerateContent" in request.path
    return bool(isinstance(obj, dict) and obj.get("stream"))


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(data) + b"\n\n"


def _pieces(text: str, n: int = 3) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _args_json(call: Any) -> str:
    return call.arguments if isinstance(call.arguments, str) else orjson.dumps(call.arguments).decode()


class _Chat:
    @staticmethod
    def usage(f: _Figures) -> dict[str, Any]:
        return {"prompt_tokens": f.prompt, "completion_tokens": f.output, "total_tokens": f.prompt + f.output,
                "prompt_tokens_details": {"cached_tokens": f.cached}}

    @staticmethod
    def calls(seq: int, reply: Reply) -> list[dict[str, Any]]:
        return [{"id": c.id or f"call_fidelity_{seq}_{i}", "type": "function",
                 "function": {"name": c.name, "arguments": _args_json(c)}} for i, c in enumerate(reply.tool_calls)]

    @classmethod
    def whole(cls, seq: int, model: str | None, reply: Reply, f: _Figures) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = cls.calls(seq, reply)
        return {"id": f"chatcmpl-fidelity-{seq}", "object": "chat.completion", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "message": message,
                                             "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
                "usage": cls.usage(f)}

    @classmethod
    async def events(cls, seq: int, model: str | None, reply: Reply, f: _Figures) -> AsyncIterator[bytes]:
        base = {"id": f"chatcmpl-fidelity-{seq}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        yield chunk({"role": "assistant", "content": ""})
        for piece in _pieces(reply.text or ""):
            yield chunk({"content": piece})
        for i, call in enumerate(cls.calls(seq, reply)):
            yield chunk({"tool_calls": [{"index": i, **call}]})
        yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
        yield _sse({**base, "choices": [], "usage": cls.usage(f)})


class _Responses:
    @staticmethod
    def output(seq: int, reply: Reply) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if reply.text is not None:
            out.append({"id": f"msg_fidelity_{seq}", "type": "message", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
        for i, c in enumerate(reply.tool_calls):
            item = {"id": f"fc_fidelity_{seq}_{i}", "type": "function_call", "status": "completed",
                    "call_id": c.id or f"call_fidelity_{seq}_{i}", "name": c.name, "arguments": _args_json(c)}
            if c.namespace is not None:
                # a tool declared inside a Responses `{"type": "namespace"}` tool is called with its
                # namespace beside the name: Codex CLI dispatches on both (observed with 0.169-0.171:
                # without it the call is answered "unsupported call", with it the agent spawns)
                item["namespace"] = c.namespace
            out.append(item)
        return out

    @classmethod
    def whole(cls, seq: int, model: str | None, reply: Reply, f: _Figures, status: str = "completed") -> dict[str, Any]:
        return {"id": f"resp_fidelity_{seq}", "object": "response", "created_at": int(time.time()), "status": status,
                "model": model, "output": cls.output(seq, reply) if status == "completed" else [],
                "usage": {"input_tokens": f.prompt, "input_tokens_details": {"cached_tokens": f.cached},
                          "output_tokens": f.output, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": f.prompt + f.output} if status == "completed" else None}

    @classmethod
    async def events(cls, seq: int, model: str | None, reply: Reply, f: _Figures) -> AsyncIterator[bytes]:
        n = itertools.count()
        yield _sse({"type": "response.created", "sequence_number": next(n),
                    "response": cls.whole(seq, model, reply, f, "in_progress")}, "response.created")
        for i, item in enumerate(cls.output(seq, reply)):
            start = {**item, "status": "in_progress"}
            if item["type"] == "message":
                start["content"] = []
            yield _sse({"type": "response.output_item.added", "sequence_number": next(n), "output_index": i,
                        "item": start}, "response.output_item.added")
            if item["type"] == "message":
                part = {"type": "output_text", "text": "", "annotations": []}
                yield _sse({"type": "response.content_part.added", "sequence_number": next(n), "item_id": item["id"],
                            "output_index": i, "content_index": 0, "part": part}, "response.content_part.added")
                for piece in _pieces(reply.text or ""):
                    yield _sse({"type": "response.output_text.delta", "sequence_number": next(n), "item_id": item["id"],
                                "output_index": i, "content_index": 0, "delta": piece}, "response.output_text.delta")
                yield _sse({"type": "response.output_text.done", "sequence_number": next(n), "item_id": item["id"],
                            "output_index": i, "content_index": 0, "text": reply.text}, "response.output_text.done")
                yield _sse({"type": "response.content_part.done", "sequence_number": next(n), "item_id": item["id"],
                            "output_index": i, "content_index": 0, "part": item["content"][0]},
                           "response.content_part.done")
            else:
                yield _sse({"type": "response.function_call_arguments.done", "sequence_number": next(n),
                            "item_id": item["id"], "output_index": i, "arguments": item["arguments"]},
                           "response.function_call_arguments.done")
            yield _sse({"type": "response.output_item.done", "sequence_number": next(n), "output_index": i,
                        "item": item}, "response.output_item.done")
        yield _sse({"type": "response.completed", "sequence_number": next(n),
                    "response": cls.whole(seq, model, reply, f)}, "response.completed")


class _Anthropic:
    @staticmethod
    def usage(f: _Figures) -> dict[str, Any]:
        return {"input_tokens": max(0, f.prompt - f.cached - f.written), "cache_creation_input_tokens": f.written,
                "cache_read_input_tokens": f.cached, "output_tokens": f.output}

    @staticmethod
    def blocks(seq: int, reply: Reply) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if reply.text is not None:
            out.append({"type": "text", "text": reply.text})
        for i, c in enumerate(reply.tool_calls):
            args = c.arguments if not isinstance(c.arguments, str) else orjson.loads(c.arguments)
            out.append({"type": "tool_use", "id": c.id or f"toolu_fidelity{seq:06d}{i:02d}", "name": c.name,
                        "input": args})
        return out

    @classmethod
    def whole(cls, seq: int, model: str | None, reply: Reply, f: _Figures) -> dict[str, Any]:
        return {"id": f"msg_fidelity{seq:06d}", "type": "message", "role": "assistant", "model": model,
                "content": cls.blocks(seq, reply), "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                "stop_sequence": None, "usage": cls.usage(f)}

    @classmethod
    async def events(cls, seq: int, model: str | None, reply: Reply, f: _Figures) -> AsyncIterator[bytes]:
        start = {**cls.whole(seq, model, reply, f), "content": [], "stop_reason": None}
        start["usage"] = {**cls.usage(f), "output_tokens": 1}
        yield _sse({"type": "message_start", "message": start}, "message_start")
        for i, block in enumerate(cls.blocks(seq, reply)):
            if block["type"] == "text":
                yield _sse({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                           "content_block_start")
                for piece in _pieces(block["text"]):
                    yield _sse({"type": "content_block_delta", "index": i,
                                "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
            else:
                yield _sse({"type": "content_block_start", "index": i,
                            "content_block": {**block, "input": {}}}, "content_block_start")
                yield _sse({"type": "content_block_delta", "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": orjson.dumps(block["input"]).decode()}},
                           "content_block_delta")
            yield _sse({"type": "content_block_stop", "index": i}, "content_block_stop")
        yield _sse({"type": "message_delta", "delta": {"stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                                                       "stop_sequence": None},
                    "usage": {"output_tokens": f.output}}, "message_delta")
        yield _sse({"type": "message_stop"}, "message_stop")


class _Gemini:
    @staticmethod
    def usage(f: _Figures) -> dict[str, Any]:
        return {"promptTokenCount": f.prompt, "cachedContentTokenCount": f.cached, "candidatesTokenCount": f.output,
                "totalTokenCount": f.prompt + f.output}

    @staticmethod
    def parts(reply: Reply) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if reply.text is not None:
            out.append({"text": reply.text})
        for c in reply.tool_calls:
            args = c.arguments if not isinstance(c.arguments, str) else orjson.loads(c.arguments)
            out.append({"functionCall": {"name": c.name, "args": args}})
        return out

    @classmethod
    def whole(cls, seq: int, model: str | None, reply: Reply, f: _Figures) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": cls.parts(reply)}, "finishReason": "STOP",
                                "index": 0}], "usageMetadata": cls.usage(f), "modelVersion": model,
                "responseId": f"fidelity-{seq}"}

    @classmethod
    async def events(cls, seq: int, model: str | None, reply: Reply, f: _Figures) -> AsyncIterator[bytes]:
        parts = cls.parts(reply)
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            chunk: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
                                     "modelVersion": model, "responseId": f"fidelity-{seq}"}
            if last:
                chunk["candidates"][0]["finishReason"] = "STOP"
                chunk["usageMetadata"] = cls.usage(f)
            yield b"data: " + orjson.dumps(chunk) + b"\r\n\r\n"


_RENDERERS: dict[str, Any] = {"openai-chat": _Chat, "openai-responses": _Responses,
                              "anthropic-messages": _Anthropic, "gemini": _Gemini}
