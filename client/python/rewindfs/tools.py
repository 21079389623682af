"""The backtrack tools (client/tools.ts): backtrack_candidates and
backtrack_commit, as function definitions for tool-calling APIs, and what
they do.

The definitions are generated from client/tools.ts into backtrack_tools.json
(scripts/generate.ts; the suite checks the copy is up to date), so both
clients offer the model the same tools.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional

from .aio import AsyncClient
from .constants import MAX_CANDIDATES

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "backtrack_tools.json"), encoding="utf-8") as _f:
    _DEFS = json.load(_f)

BACKTRACK_CANDIDATES = "backtrack_candidates"
BACKTRACK_COMMIT = "backtrack_commit"
NOTE_FIELDS = ("tried", "why_abandoned", "instead", "facts", "milestones")

#: provider-neutral: [{name, description, parameters}]
BACKTRACK_TOOLS: List[Dict[str, Any]] = _DEFS["tools"]


def openai_tools() -> List[Dict[str, Any]]:
    """Both tools in OpenAI's shape: {type: "function", function: {name, description, parameters}}."""
    return [{"type": "function", "function": dict(t)} for t in BACKTRACK_TOOLS]


def anthropic_tools() -> List[Dict[str, Any]]:
    """Both tools in Anthropic's shape: {name, description, input_schema}."""
    return [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in BACKTRACK_TOOLS]


class ToolArgumentError(ValueError):
    """Arguments the model can fix; `field` names the argument."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


REWIND_DEPTHS = ("both", "context", "workspace")
"""How far a backtrack goes (client/tools.ts REWIND_DEPTHS): both = files restored and context rebuilt;
context = only the context rebuilt, the files kept; workspace = only the files restored, the conversation kept."""


def parse_commit_args(args: Dict[str, Any]) -> Dict[str, Any]:
    """Check backtrack_commit arguments {checkpoint_id, memory, reason, depth?}; raise ToolArgumentError."""
    for k in args:
        if k not in ("checkpoint_id", "memory", "reason", "depth"):
            raise ToolArgumentError(k, f"unknown argument {k}; the arguments are checkpoint_id, memory, reason, depth")
    depth = args.get("depth")
    if depth is not None and depth not in REWIND_DEPTHS:
        raise ToolArgumentError("depth", f"depth must be one of {', '.join(REWIND_DEPTHS)}")
    cid = args.get("checkpoint_id")
    if not isinstance(cid, int) or isinstance(cid, bool) or cid < 1:
        raise ToolArgumentError("checkpoint_id", "checkpoint_id must be an integer ≥ 1")
    mem = args.get("memory")
    if not isinstance(mem, dict):
        raise ToolArgumentError("memory", "memory must be an object {tried, why_abandoned, instead, facts, milestones}")
    for k in mem:
        if k not in NOTE_FIELDS:
            raise ToolArgumentError(f"memory.{k}", f"memory.{k}: unknown field; the fields are {', '.join(NOTE_FIELDS)} (never the current state)")
    for k in ("tried", "why_abandoned", "instead"):
        if not isinstance(mem.get(k), str):
            raise ToolArgumentError(f"memory.{k}", f"memory.{k} must be a string")
    for k in ("facts", "milestones"):
        v = mem.get(k)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ToolArgumentError(f"memory.{k}", f"memory.{k} must be an array of strings")
    reason = args.get("reason")
    if not isinstance(reason, str):
        raise ToolArgumentError("reason", "reason must be a string")
    return {"checkpoint_id": cid, "memory": {k: mem[k] for k in NOTE_FIELDS}, "reason": reason, "depth": depth}


async def backtrack_candidates(client: AsyncClient, args: Dict[str, Any], limit: int = MAX_CANDIDATES) -> Dict[str, Any]:
    """Run backtrack_candidates: {candidates: [{id, step, label, time, branch, meta}]}, newest first."""
    if not isinstance(args.get("reason"), str):
        raise ToolArgumentError("reason", "reason must be a string")
    return {"candidates": await client.candidates(max(1, min(limit, MAX_CANDIDATES)))}


async def backtrack_commit(client: AsyncClient, run: str, args: Dict[str, Any], target: Optional[int] = None,
                           depth: Optional[str] = None, verify: Optional[Callable[[int, str], Awaitable[None]]] = None) -> Dict[str, Any]:
    """Run backtrack_commit for `run`: check the arguments and that the checkpoint is a
    candidate, await `verify(checkpoint, depth)` (it may raise ToolArgumentError before
    anything changes), add the memory entry (durable first), restore unless the depth
    (the arguments', else `depth`, else "both") is "context". Returns
    {checkpoint, from, depth, restore (None at depth context), record, memoryCount}."""
    a = parse_commit_args(args)
    cands = await client.candidates(MAX_CANDIDATES)
    if not any(c["id"] == a["checkpoint_id"] for c in cands):
        raise ToolArgumentError("checkpoint_id", f"checkpoint {a['checkpoint_id']} is not among the candidates (call {BACKTRACK_CANDIDATES})")
    to = target if target is not None else a["checkpoint_id"]
    d = a["depth"] or depth or "both"
    if d not in REWIND_DEPTHS:
        raise ValueError(f"depth must be one of {', '.join(REWIND_DEPTHS)}, not {d!r}")
    if verify is not None:
        await verify(to, d)
    frm = (await client.status())["head"]
    record = {"kind": "rewindfs.memory/1", **a["memory"], "reason": a["reason"], "from": frm, "to": to, "time": int(time.time() * 1000)}
    count = await client.memory_add(run, record)
    restored = None if d == "context" else await client.restore(to)
    return {"checkpoint": to, "from": frm, "depth": d, "restore": restored, "record": record, "memoryCount": count}


def render_memory(entries: List[Dict[str, Any]]) -> str:
    """The whole rewind memory as one text (client/memory.ts renderMemoryText)."""
    n = len(entries)
    out = [f"Rewind memory: you have rewound {n} time{'' if n == 1 else 's'} in this run. The workspace and this conversation were restored "
           "to an earlier checkpoint; what you learned before is below. It holds lessons and lasting facts only, never the current state: check the workspace yourself."]
    for i, e in enumerate(entries, 1):
        if e.get("kind") != "rewindfs.memory/1":
            out += ["", f"{i}. {json.dumps(e)}"]
            continue
        out += ["", f"{i}. Rewound to checkpoint {e.get('to', '?')}" + (f" because: {e['reason']}" if e.get("reason") else "")]
        out += [f"   Tried: {e.get('tried', '')}", f"   Abandoned because: {e.get('why_abandoned', '')}", f"   Instead: {e.get('instead', '')}"]
        out += [f"   Fact: {f}" for f in e.get("facts", [])]
        out += [f"   Milestone reached: {m}" for m in e.get("milestones", [])]
    return "\n".join(out)
