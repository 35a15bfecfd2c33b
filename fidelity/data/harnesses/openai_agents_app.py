"""A minimal app on the OpenAI Agents SDK (``openai-agents``), run by
``fidelity harness`` with the release's own Python: a ``main`` agent that
can hand the conversation off to a ``counter`` agent (kind ``handoff``) or
call it as a tool (kind ``agent-as-tool``), over Chat Completions at
``OPENAI_BASE_URL``. Usage: ``python openai_agents_app.py PROMPT``; the kind
comes from ``FIDELITY_AGENTS_KIND``."""

import os
import sys

from agents import Agent, Runner, function_tool, set_default_openai_api, set_tracing_disabled

set_tracing_disabled(True)  # no trace export: nothing leaves the machine
set_default_openai_api("chat_completions")


def list_files() -> str:
    """List the files in the project folder."""
    return "README.md\nmain.py"


files_tool = function_tool(list_files)


counter = Agent(name="counter", model="gpt-4.1", instructions="You count files. Reply with the number only.",
                tools=[files_tool])
if os.environ.get("FIDELITY_AGENTS_KIND") == "handoff":
    main = Agent(name="main", model="gpt-4.1", tools=[files_tool], handoffs=[counter],
                 instructions="You are a helpful assistant. Hand questions about counting to the counter agent.")
else:
    main = Agent(name="main", model="gpt-4.1", instructions="You are a helpful assistant. Use your tools.",
                 tools=[files_tool, counter.as_tool(tool_name="count_files", tool_description="Count the files.")])
print(Runner.run_sync(main, sys.argv[1], max_turns=6).final_output)
