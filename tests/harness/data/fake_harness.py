"""A stand-in harness for offline tests: an OpenAI Chat client that asks its
parent turn with an ``agent`` tool, and when the reply calls it, sends the
child's request (one tool fewer, the parent's history kept), like a fork.
Reads its base URL from a config file under HOME (``{proxy}`` filled in by
the driver) and its key from the environment."""

import json
import os
import sys
import urllib.request

home = os.environ["HOME"]
with open(os.path.join(home, ".fake", "config.json")) as fh:
    base = json.load(fh)["base_url"]
key = os.environ["FAKE_KEY"]
prompt = sys.argv[1]
system = {"role": "system", "content": "You are a fake harness. " * 400}
tools = [{"type": "function", "function": {"name": n, "description": f"the {n} tool " * 10,
                                           "parameters": {"type": "object", "properties": {}}}}
         for n in ("agent", "read", "write")]


session = os.environ.get("FAKE_SESSION")  # like Codex: a session id in a header and in the body


def send(messages, tools):
    obj = {"model": "qwen3-coder-plus", "messages": messages, "tools": tools}
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    if session:
        obj["prompt_cache_key"] = session
        headers["session_id"] = session
    body = json.dumps(obj).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", data=body, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


history = [system, {"role": "user", "content": prompt}]
msg = send(history, tools)["choices"][0]["message"]
for call in msg.get("tool_calls") or ():
    args = json.loads(call["function"]["arguments"])
    child = history + [msg, {"role": "tool", "tool_call_id": call["id"], "content": "Fork started."},
                       {"role": "user", "content": args["prompt"]}]
    drop = os.environ.get("FAKE_DROP", "agent")
    send(child, [t for t in tools if t["function"]["name"] != drop])
print("done")
