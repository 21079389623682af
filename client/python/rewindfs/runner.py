"""A small agent loop with the backtrack tools (a Python counterpart of
client/runner.ts, without its recorder and run log).

Before each model call the runner marks a checkpoint with the context
{kind: "rewindfs.context/1", run, messages}. The model's tool calls run in
order through `execute_tool`, except the backtrack tools, which the runner
answers. When the model commits a backtrack, the rest of that reply is
dropped, the memory note is added to the run's rewind memory, the workspace
is restored, and the loop continues from the context stored with that
checkpoint plus the whole rewind memory as one user message.

    model(messages, tools) -> {"content": str, "tool_calls": [{"id", "name", "arguments": dict}]}
    execute_tool(call) -> any JSON result
Both may be plain functions or coroutines.

With attribute_calls (default) each of the agent's tools runs inside a tool
call of the daemon (call_begin/call_end with this process's pid), so the next
checkpoint lists what it changed; with localise=True the runner also offers
backtrack_localise and answers it (tools.backtrack_localise).
"""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Optional, Union

from .aio import AsyncClient
from .errors import RewindError
from .tools import (BACKTRACK_CANDIDATES, BACKTRACK_COMMIT, BACKTRACK_LOCALISE, BACKTRACK_TOOLS, DEFAULT_PROBE_TIMEOUT, LOCALISE_TOOL, REWIND_DEPTHS,
                    ToolArgumentError, backtrack_candidates, backtrack_commit, backtrack_localise, render_memory)

Message = Dict[str, Any]
Model = Callable[[List[Message], List[Dict[str, Any]]], Union[Dict[str, Any], Awaitable[Dict[str, Any]]]]
ExecuteTool = Callable[[Dict[str, Any]], Any]

CONTEXT_KIND = "rewindfs.context/1"
MEMORY_NAME = "rewind_memory"


async def _maybe(x: Any) -> Any:
    return await x if inspect.isawaitable(x) else x


@dataclass
class RunResult:
    """What a run did: final messages and text, why it stopped, model calls, checkpoints marked, rewinds committed."""
    messages: List[Message]
    final: str
    stopped: str
    turns: int
    checkpoints: List[int] = field(default_factory=list)
    rewinds: List[Dict[str, Any]] = field(default_factory=list)


class Runner:
    """Drives `model` with the agent's `tools` plus the backtrack tools; see the module docstring."""

    def __init__(self, client: AsyncClient, model: Model, execute_tool: ExecuteTool, run: str,
                 tools: Optional[List[Dict[str, Any]]] = None, rewind_budget: Optional[int] = None, max_turns: int = 200,
                 rewind_depth: str = "both", localise: bool = False, localise_timeout: float = DEFAULT_PROBE_TIMEOUT,
                 attribute_calls: bool = True) -> None:
        if rewind_depth not in REWIND_DEPTHS:
            raise ValueError(f"rewind_depth must be one of {', '.join(REWIND_DEPTHS)}, not {rewind_depth!r}")
        self.client, self.model, self.execute_tool, self.run_name = client, model, execute_tool, run
        self.rewind_depth = rewind_depth
        self.tools = list(tools or []) + BACKTRACK_TOOLS + ([LOCALISE_TOOL] if localise else [])
        self.localise, self.localise_timeout = localise, localise_timeout
        self.attribute_calls = attribute_calls
        self.rewind_budget = rewind_budget
        self.max_turns = max_turns

    async def run(self, initial: List[Message]) -> RunResult:
        """Run from `initial` until the model answers without tool calls, or max_turns."""
        messages = list(initial)
        res = RunResult(messages, "", "max_turns", 0)
        while res.turns < self.max_turns:
            cp = await self.client.mark(f"before model call {res.turns + 1}", context={"kind": CONTEXT_KIND, "run": self.run_name, "messages": messages})
            res.checkpoints.append(cp["id"])
            reply = await _maybe(self.model(messages, self.tools))
            res.turns += 1
            calls = reply.get("tool_calls") or []
            res.final = reply.get("content") or ""
            said: Message = {"role": "assistant", "content": res.final}
            if calls:
                said["tool_calls"] = calls
            messages = messages + [said]
            if not calls:
                await self.client.run_end(self.run_name)
                res.messages, res.stopped = messages, "finished"
                return res
            for call in calls:
                if call["name"] == BACKTRACK_COMMIT and (self.rewind_budget is None or len(res.rewinds) < self.rewind_budget):
                    async def verify(cid: int, depth: str) -> None:
                        if depth == "workspace":
                            return  # the conversation goes on: no stored context needed
                        c = await self.client.context(cid)
                        if not isinstance(c, dict) or c.get("kind") != CONTEXT_KIND:
                            raise ToolArgumentError("checkpoint_id", f"checkpoint {cid} was not marked by this run's runner (it carries no stored context to continue from); choose a checkpoint labelled \"before model call N\"")
                    try:
                        done = await backtrack_commit(self.client, self.run_name, call.get("arguments") or {}, depth=self.rewind_depth, verify=verify)
                    except ToolArgumentError as e:
                        messages = messages + [self._answer(call, {"error": str(e), "field": e.field})]
                        continue
                    res.rewinds.append({"checkpoint": done["checkpoint"], "from": done["from"], "memoryCount": done["memoryCount"], "depth": done["depth"]})
                    if done["depth"] == "workspace":
                        # the files went back, the conversation goes on: answer this call, the rest of the reply as not run
                        messages = messages + [self._answer(call, {"restored": done["checkpoint"], "depth": "workspace", "changed": (done["restore"] or {}).get("changed", 0)})]
                        for rest in calls[calls.index(call) + 1:]:
                            messages = messages + [self._answer(rest, {"error": f"not run: {BACKTRACK_COMMIT} ended the turn (the files were restored to checkpoint {done['checkpoint']})"})]
                        break
                    ctx = await self.client.context(done["checkpoint"])
                    memory = await self.client.memory_get(self.run_name)
                    messages = [m for m in ctx["messages"] if m.get("name") != MEMORY_NAME] + [{"role": "user", "name": MEMORY_NAME, "content": render_memory(memory)}]
                    break
                if call["name"] == BACKTRACK_COMMIT:
                    result: Any = {"error": f"the rewind budget ({self.rewind_budget}) is spent; continue from here"}
                elif call["name"] == BACKTRACK_CANDIDATES:
                    try:
                        result = await backtrack_candidates(self.client, call.get("arguments") or {})
                    except ToolArgumentError as e:
                        result = {"error": str(e), "field": e.field}
                elif call["name"] == BACKTRACK_LOCALISE and self.localise:
                    try:
                        result = await backtrack_localise(self.client, call.get("arguments") or {}, self.localise_timeout)
                    except ToolArgumentError as e:
                        result = {"error": str(e), "field": e.field}
                else:
                    result = await self._attributed(call)
                messages = messages + [self._answer(call, result)]
        res.messages = messages
        return res

    async def _attributed(self, call: Dict[str, Any]) -> Any:
        """Run the agent's own tool inside a tool call of the daemon (call_begin with this process's pid, call_end
        after), so the next checkpoint lists what it changed; a daemon without call_begin is used without (once)."""
        cid = None
        if self.attribute_calls:
            try:
                cid = (await self.client.call_begin(call["name"], args=call.get("arguments")))["call"]
            except (RewindError, AttributeError):  # a daemon (or a stand-in client) without call_begin
                self.attribute_calls = False
        status = 0
        try:
            return await _maybe(self.execute_tool(call))
        except Exception as e:  # the tool's failure is the model's to read
            status = 1
            return {"error": str(e)}
        finally:
            if cid is not None:
                try:
                    await self.client.call_end(cid, status)
                except RewindError:
                    pass

    @staticmethod
    def _answer(call: Dict[str, Any], result: Any) -> Message:
        return {"role": "tool", "tool_call_id": call.get("id"), "name": call["name"], "content": json.dumps(result)}
