"""A small offline task: the mock model's one tool call runs `bash` in the sandbox."""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, execute_tools
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, TaskState, solver, use_tools
from inspect_ai.tool import bash

PROBE = "echo inside-$(cat /etc/hostname)-uid$(id -u); cat /workspace/greeting.txt"


@solver
def call_bash_once():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        call = ModelOutput.for_tool_call("mockllm/model", "bash", {"command": PROBE})
        state.messages.append(call.message)
        result = await execute_tools(state.messages, state.tools)
        state.messages.extend(result.messages)
        state.output = ModelOutput.from_content("mockllm/model", result.messages[-1].text)
        return state

    return solve


@task
def probe():
    return Task(
        dataset=[
            Sample(input="where am I?", target="inside-lnx-", files={"greeting.txt": "hello from the sample"}),
            Sample(input="and here?", target="inside-lnx-", files={"greeting.txt": "hello again"}),
        ],
        solver=[use_tools(bash()), call_bash_once()],
        scorer=includes(),
        sandbox="corral",
    )
