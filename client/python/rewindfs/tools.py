"""The backtrack tools (client/tools.ts): backtrack_candidates and
backtrack_commit, as function definitions for tool-calling APIs, and what
they do; and backtrack_localise (client/localise.ts), which runs a check
over the candidates (binary search, each probe in a scratch export).

The definitions are generated from client/tools.ts into backtrack_tools.json
(scripts/generate.ts; the suite checks the copy is up to date), so both
clients offer the model the same tools.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional

from .aio import AsyncClient
from .constants import DEFAULT_PROBE_TIMEOUT, MAX_CANDIDATE_FILES, MAX_CANDIDATES

_HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_HERE, "backtrack_tools.json"), encoding="utf-8") as _f:
    _DEFS = json.load(_f)

BACKTRACK_CANDIDATES = "backtrack_candidates"
BACKTRACK_COMMIT = "backtrack_commit"
BACKTRACK_LOCALISE = "backtrack_localise"
NOTE_FIELDS = ("tried", "why_abandoned", "instead", "facts", "milestones")

#: provider-neutral: [{name, description, parameters}]
BACKTRACK_TOOLS: List[Dict[str, Any]] = _DEFS["tools"]
#: the localise tool, offered by the runner with localise=True: {name, description, parameters}
LOCALISE_TOOL: Dict[str, Any] = _DEFS["localise"]


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


_LETTER = {"added": "A", "deleted": "D", "modified": "M", "meta": "m", "type": "T"}


async def segment_files(client: AsyncClient, c: Dict[str, Any], parent: Optional[int]) -> Optional[List[str]]:
    """The files the segment ending at candidate `c` changed, one line each ("A path", "M path", "D path", "m path",
    "T path"; " (call N: tool)" when the daemon attributed it): from the daemon's attribution (`calls`), else the
    recorder's segment metadata, else the diff from `parent` (the next older candidate); None when none knows
    (client/tools.ts segmentFiles)."""
    calls = c.get("calls")
    if calls:
        out: List[str] = []
        for k in calls["calls"]:
            by = "" if k["call"] is None else f" (call {k['call']}: {k['tool']})"
            out += [f"A {f['path']}{by}" for f in k["created"]]
            out += [f"{'m' if f.get('attrsOnly') else 'M'} {f['path']}{by}" for f in k["modified"]]
            out += [f"D {f['path']}{by}" for f in k["deleted"]]
        return out
    meta = c.get("meta")
    if isinstance(meta, dict) and meta.get("kind") == "rewindfs.segment/1":
        f = meta["files"]
        return [f"A {x['path']}" for x in f["created"]] + [f"{'m' if x.get('attrsOnly') else 'M'} {x['path']}" for x in f["modified"]] + [f"D {x['path']}" for x in f["deleted"]]
    if parent is None:
        return None
    return [f"{_LETTER[e['change']]} {e['path'].lstrip('/')}" for e in await client.diff(parent, c["id"]) if e["path"] != "/"]


async def backtrack_candidates(client: AsyncClient, args: Dict[str, Any], limit: int = MAX_CANDIDATES) -> Dict[str, Any]:
    """Run backtrack_candidates: {candidates: [{id, step, label, time, branch, meta}]}, newest first; with
    args files=True each candidate also has `files` (segment_files, at most MAX_CANDIDATE_FILES; `files_more` the rest)."""
    for k in args:
        if k not in ("reason", "files"):
            raise ToolArgumentError(k, f"unknown argument {k}; the arguments are reason, files")
    if not isinstance(args.get("reason"), str):
        raise ToolArgumentError("reason", "reason must be a string")
    files = args.get("files")
    if files is not None and not isinstance(files, bool):
        raise ToolArgumentError("files", "files must be true or false")
    cands = await client.candidates(max(1, min(limit, MAX_CANDIDATES)))
    if files:
        for i, c in enumerate(cands):
            lines = await segment_files(client, c, cands[i + 1]["id"] if i + 1 < len(cands) else None)
            if lines is None:
                continue
            c["files"] = lines[:MAX_CANDIDATE_FILES]
            if len(lines) > MAX_CANDIDATE_FILES:
                c["files_more"] = len(lines) - MAX_CANDIDATE_FILES
    return {"candidates": cands}


def parse_localise_args(args: Dict[str, Any]) -> Dict[str, Any]:
    """Check backtrack_localise arguments {command, good?, bad?, reason}; raise ToolArgumentError."""
    for k in args:
        if k not in ("command", "good", "bad", "reason"):
            raise ToolArgumentError(k, f"unknown argument {k}; the arguments are command, good, bad, reason")
    cmd = args.get("command")
    if not isinstance(cmd, list) or not cmd or len(cmd) > 256 or not all(isinstance(x, str) for x in cmd) or cmd[0] == "":
        raise ToolArgumentError("command", "command must be an array of 1..256 strings, the program first (e.g. [\"npm\", \"test\"])")
    if not isinstance(args.get("reason"), str):
        raise ToolArgumentError("reason", "reason must be a string")
    out: Dict[str, Any] = {"command": cmd, "reason": args["reason"], "good": None, "bad": None}
    for f in ("good", "bad"):
        v = args.get(f)
        if v is None:
            continue
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ToolArgumentError(f, f"{f} must be a checkpoint id (an integer ≥ 1) from backtrack_candidates")
        out[f] = v
    return out


async def probe_in_export(client: AsyncClient, checkpoint: int, command: List[str], timeout: float = DEFAULT_PROBE_TIMEOUT) -> Dict[str, Any]:
    """Run `command` in a scratch export of `checkpoint` (a temporary directory, removed after; never the
    workspace); {checkpoint, fails, exit_status}. A probe longer than `timeout` seconds is killed and fails (137)."""
    d = tempfile.mkdtemp(prefix=f"rewindfs-bisect-{checkpoint}-")
    try:
        await client.export(checkpoint, d)
        try:
            proc = await asyncio.create_subprocess_exec(*command, cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError as e:
            raise ToolArgumentError("command", f"cannot run {command[0]}: {e.strerror or e}")
        try:
            code = await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            code = 137
        if code < 0:
            code = 128 - code
        return {"checkpoint": checkpoint, "fails": code != 0, "exit_status": code}
    finally:
        shutil.rmtree(d, ignore_errors=True)


async def backtrack_localise(client: AsyncClient, args: Dict[str, Any], timeout: float = DEFAULT_PROBE_TIMEOUT) -> Dict[str, Any]:
    """Run backtrack_localise (client/localise.ts): binary search over the candidates (oldest first, cut to
    [good, bad]) for the first at which the check fails, each probe in a scratch export; at most
    2 + ceil(log2(n)) probes. {first_bad, last_good, label, probes, files (, files_more)}. Raises
    ToolArgumentError when good or bad is not a candidate, good is not older, or the check fails at good or passes at bad."""
    a = parse_localise_args(args)
    cands = await client.candidates(MAX_CANDIDATES)
    line = [c["id"] for c in reversed(cands)]

    def at(f: str, dflt: int) -> int:
        if a[f] is None:
            return dflt
        if a[f] not in line:
            raise ToolArgumentError(f, f"checkpoint {a[f]} is not among the candidates (call {BACKTRACK_CANDIDATES})")
        return line.index(a[f])
    lo, hi = at("good", 0), at("bad", len(line) - 1)
    if hi - lo < 1:
        raise ToolArgumentError("bad" if a["bad"] is not None else "good", "good must be an older candidate than bad")
    probes: List[Dict[str, Any]] = []

    async def fails(i: int) -> bool:
        p = await probe_in_export(client, line[i], a["command"], timeout)
        probes.append(p)
        return p["fails"]
    if not await fails(hi):
        raise ToolArgumentError("bad", f"the check passes at the bad checkpoint {line[hi]}: nothing to search for")
    if await fails(lo):
        raise ToolArgumentError("good", f"the check already fails at the good checkpoint {line[lo]}: choose an older good")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if await fails(mid):
            hi = mid
        else:
            lo = mid
    i = next(j for j, c in enumerate(cands) if c["id"] == line[hi])
    lines = await segment_files(client, cands[i], cands[i + 1]["id"] if i + 1 < len(cands) else None) or []
    out = {"first_bad": line[hi], "last_good": line[lo], "label": cands[i].get("label"), "probes": probes, "files": lines[:MAX_CANDIDATE_FILES]}
    if len(lines) > MAX_CANDIDATE_FILES:
        out["files_more"] = len(lines) - MAX_CANDIDATE_FILES
    return out


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
