"""A minimal app on the Claude Agent SDK (``claude-agent-sdk``), run by
``fidelity harness`` with the release's own Python: one programmatic
subagent, ``counter``, declared in ``ClaudeAgentOptions.agents``; the SDK
runs the Claude Code CLI it bundles, which reads ``ANTHROPIC_BASE_URL``.
Usage: ``python claude_agent_sdk_app.py PROMPT``."""

import asyncio
import sys

from claude_agent_sdk import AgentDefinition, ClaudeAgentOptions, query


async def main() -> None:
    options = ClaudeAgentOptions(
        agents={"counter": AgentDefinition(description="Counts the files in a folder.",
                                           prompt="You count files. Reply with the number only.",
                                           tools=["Bash", "Read"])},
        allowed_tools=["Agent", "Task", "Bash", "Read"], model="claude-sonnet-4-6", max_turns=6)
    async for message in query(prompt=sys.argv[1], options=options):
        print(type(message).__name__)


asyncio.run(main())
