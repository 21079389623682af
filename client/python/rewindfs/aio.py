"""AsyncClient: the asyncio client of the rewindfs daemon (proto/PROTOCOL.md).

    import asyncio, rewindfs
    async def main():
        async with await rewindfs.AsyncClient.connect(workspace="/path/to/ws") as c:
            cp = await c.mark("before refactor", context={"messages": []})
            await c.restore(cp["id"])
    asyncio.run(main())

One connection; requests may run concurrently (replies are matched by id);
events after subscribe() arrive on `events` (an asyncio.Queue). Every error
reply raises RewindError(code, message, details). Frames: JSON text frames
or msgpack binary frames (`encoding`); bytes are Python `bytes` either way.
Works with websockets 10.4 (Debian 12) and later.
"""
from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any, Dict, List, Optional

import websockets

from . import codec
from .constants import PROTOCOL_VERSION, TOKEN_FILE
from .discover import discover, read_connection_file, read_token
from .errors import RewindError

DEFAULT_TIMEOUT = 30.0
# the server's default maxPayload (64 MiB) plus framing slack
MAX_FRAME = 64 * 1024 * 1024 + 1024 * 1024
CLIENT_NAME = "rewindfs-python/0.1.0"


def _status_of(e: BaseException) -> Optional[int]:
    s = getattr(e, "status_code", None)  # websockets 10: InvalidStatusCode
    if s is None:
        s = getattr(getattr(e, "response", None), "status_code", None)  # 11+: InvalidStatus
    return s


class AsyncClient:
    """A connection to the daemon. Create with `await AsyncClient.connect(...)`."""

    def __init__(self, ws: Any, encoding: str, timeout: float) -> None:
        """Use connect(); this wraps an open websocket."""
        self._ws = ws
        self.encoding = encoding
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._pending: Dict[int, asyncio.Future] = {}
        self.events: "asyncio.Queue[Dict[str, Any]]" = asyncio.Queue()
        self.server: Dict[str, Any] = {}
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, workspace: Optional[str] = None, *, store: Optional[str] = None, url: Optional[str] = None,
                      socket: Optional[str] = None, token: Optional[str] = None, encoding: str = "json",
                      timeout: float = DEFAULT_TIMEOUT) -> "AsyncClient":
        """Connect and say hello. Endpoint: `url` or `socket` (with `token`), else
        `store` (its daemon.json and token), else discovery from `workspace` (a
        workspace or any path inside one; default: the current directory).
        `encoding`: "json" (text frames) or "msgpack" (binary frames).
        Raises RewindError: E_DISCOVERY, E_CONNECTION, E_UNAUTHORIZED (401).
        """
        if encoding not in codec.ENCODINGS:
            raise ValueError(f"encoding must be 'json' or 'msgpack', got {encoding!r}")
        if url is None and socket is None:
            if store is not None:
                info = read_connection_file(store)
                token = token if token is not None else read_token(os.path.join(store, TOKEN_FILE))
            else:
                where = workspace if workspace is not None else os.getcwd()
                info = discover(where)
                if info is None:
                    raise RewindError("E_DISCOVERY", f"no rewindfs daemon serves {where}: no connection file for it or an ancestor "
                                      "(is it mounted? rewindfs mount DIR; REWINDFS_RUNTIME_DIR must match the daemon's)")
                token = token if token is not None else read_token(info["token"])
            socket = info.get("socket")
            if socket is None:
                url = f"ws://127.0.0.1:{info['port']}/"
        if token is None:
            raise ValueError("give token with url or socket")
        kw = dict(extra_headers={"Authorization": f"Bearer {token}"}, compression=None, max_size=MAX_FRAME,
                  open_timeout=timeout)  # and no Origin header: browsers are refused
        try:
            if socket is not None:
                ws = await websockets.unix_connect(socket, "ws://localhost/", **kw)
            else:
                ws = await websockets.connect(url, **kw)
        except Exception as e:  # refused upgrade (401, 403), no daemon, ...
            if _status_of(e) == 401:
                raise RewindError("E_UNAUTHORIZED", "the daemon refused the token (HTTP 401)") from e
            raise RewindError("E_CONNECTION", f"cannot connect to the daemon ({socket or url}): {e}") from e
        c = cls(ws, encoding, timeout)
        try:
            c.server = await c.call("hello", client=CLIENT_NAME)
        except BaseException:
            await c.close()
            raise
        return c

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _read(self) -> None:
        err: RewindError = RewindError("E_CONNECTION", "connection closed")
        try:
            async for frame in self._ws:
                try:
                    msg, _ = codec.decode(frame, isinstance(frame, bytes))
                except Exception:
                    continue  # a frame we cannot decode answers nothing we wait for
                if not isinstance(msg, dict):
                    continue
                if "event" in msg:
                    self.events.put_nowait(msg)
                    continue
                fut = self._pending.pop(msg.get("id"), None) if isinstance(msg.get("id"), int) else None
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        except websockets.exceptions.ConnectionClosed as e:
            code = getattr(e, "code", None)
            err = RewindError("E_TOO_LARGE" if code == 1009 else "E_CONNECTION", f"connection lost: {e}")
        except Exception as e:  # pragma: no cover - transport failure
            err = RewindError("E_CONNECTION", f"connection lost: {e}")
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(err)
        self._pending.clear()

    async def request(self, op: str, args: Dict[str, Any], timeout: Optional[float] = None) -> Any:
        """Send `op` with exactly `args` (no None dropped) and return the reply's `ok`; raise RewindError."""
        if self._reader.done():
            raise RewindError("E_CONNECTION", "connection closed", op=op)
        rid = next(self._ids)
        msg = dict(args)
        msg.update(v=PROTOCOL_VERSION, id=rid, op=op)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            await self._ws.send(codec.encode(msg, self.encoding))
            reply = await asyncio.wait_for(fut, timeout if timeout is not None else self.timeout)
        except asyncio.TimeoutError as e:
            raise RewindError("E_TIMEOUT", f"{op}: no reply within {timeout or self.timeout} s", op=op) from e
        except websockets.exceptions.ConnectionClosed as e:
            raise RewindError("E_CONNECTION", f"{op}: connection lost: {e}", op=op) from e
        finally:
            self._pending.pop(rid, None)
        if "error" in reply:
            e = reply["error"]
            raise RewindError(e.get("code", "E_INTERNAL"), e.get("message", ""), e.get("details"), op)
        return reply.get("ok")

    async def call(self, op: str, **args: Any) -> Any:
        """Send `op` with `args` (None values dropped: not given) and return its `ok`."""
        return await self.request(op, {k: v for k, v in args.items() if v is not None})

    async def close(self) -> None:
        """Close the connection (idempotent); waiting requests fail with E_CONNECTION."""
        await self._ws.close()
        try:
            await self._reader
        except Exception:
            pass

    # ------------------------------------------------------------ operations (PROTOCOL.md §4)

    async def hello(self, client: Optional[str] = None) -> Dict[str, Any]:
        """HelloInfo: protocol, versions, server, ops, events, encodings, maxPayload, maxRead."""
        return await self.call("hello", client=client)

    async def status(self) -> Dict[str, Any]:
        """StatusInfo: workspace, store, branch, head, generation, checkpoints, inodes, dirtyBytes, ..."""
        return await self.call("status")

    async def mark(self, label: Optional[str] = None, context: Any = None, meta: Any = None) -> Dict[str, Any]:
        """Seal the workspace as a checkpoint with `label`, the agent's `context` and segment `meta` (values, PROTOCOL.md "Values"); CheckpointInfo."""
        return await self.call("mark", label=label, context=context, meta=meta)

    async def restore(self, checkpoint: int, paths: Optional[List[str]] = None, dry_run: Optional[bool] = None) -> Dict[str, Any]:
        """Restore checkpoint `checkpoint` exactly; RestoreInfo {checkpoint, branch, changed, ms, saved, savedAll}.

        With `paths` (workspace paths, not the root; at most 10000) only those files or subtrees go back, as a
        new checkpoint on the current branch (RestoreInfo adds paths, changes, result); with `dry_run` nothing
        changes and `changes` lists what would (PROTOCOL.md "Selective restore and undo")."""
        return await self.call("restore", checkpoint=checkpoint, paths=paths, dryRun=dry_run)

    async def undo(self, checkpoint: int, dry_run: Optional[bool] = None) -> Dict[str, Any]:
        """Revert the segment ending at checkpoint `checkpoint` (what changed since its parent), keeping later work; UndoInfo.
        A first checkpoint or one off the current lineage is E_BAD_REQUEST; with `dry_run` nothing changes."""
        return await self.call("undo", checkpoint=checkpoint, dryRun=dry_run)

    async def history(self, path: str, all_branches: Optional[bool] = None, limit: Optional[int] = None,
                      meta: Optional[bool] = None) -> List[Dict[str, Any]]:
        """The checkpoints at which workspace path `path` ("" the root) changed, newest first: PathHistoryEntry[]
        of the current lineage (every branch with `all_branches`), at most `limit` (1..100000, default 100);
        `meta` adds each checkpoint's segment metadata (PROTOCOL.md "Per-path history")."""
        return await self.call("history", path=path, all=all_branches, limit=limit, meta=meta)

    async def blame(self, path: str, all_branches: Optional[bool] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """history(path, meta=True): which checkpoint (and which tool call or step, by its segment metadata) changed `path`."""
        return await self.history(path, all_branches, limit, True)

    async def call_begin(self, tool: str, pid: Optional[int] = None, args: Any = None) -> Dict[str, Any]:
        """Begin a tool call (PROTOCOL.md "Attribution"): every change process `pid` (default: this process, os.getpid())
        and the processes it starts make until call_end is attributed to the call in the next checkpoint's `calls`;
        CallInfo {call, tool, mechanism, cgroup}. Call it before starting the tool."""
        return await self.call("call_begin", tool=tool, pid=os.getpid() if pid is None else pid, args=args)

    async def call_end(self, call: int, exit_status: Optional[int] = None) -> Dict[str, Any]:
        """End tool call `call` with the tool's `exit_status` (0 success); CallInfo."""
        return await self.call("call_end", call=call, exitStatus=exit_status)

    async def log(self, branch: Optional[str] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """CheckpointInfo of every checkpoint (or of `branch`), newest first, at most `limit`."""
        return await self.call("log", branch=branch, limit=limit)

    async def diff(self, a: int, b: Optional[int] = None) -> List[Dict[str, Any]]:
        """DiffEntry list {path, change} from checkpoint `a` to `b` (or to the live workspace)."""
        return await self.call("diff", a=a, b=b)

    async def stat(self, path: str, checkpoint: Optional[int] = None) -> Optional[Dict[str, Any]]:
        """StatInfo of workspace path `path` at `checkpoint` (live when None), or None when absent."""
        return await self.call("stat", path=path, checkpoint=checkpoint)

    async def readdir(self, path: str, checkpoint: Optional[int] = None) -> List[Dict[str, Any]]:
        """StatInfo of each entry of directory `path` at `checkpoint` (live when None)."""
        return await self.call("readdir", path=path, checkpoint=checkpoint)

    async def read(self, path: str, checkpoint: Optional[int] = None, offset: Optional[int] = None, length: Optional[int] = None) -> bytes:
        """Bytes of file `path` at `checkpoint` (live when None) from `offset`, at most `length` (≤ 16 MiB)."""
        return await self.call("read", path=path, checkpoint=checkpoint, offset=offset, length=length)

    async def context(self, checkpoint: int) -> Any:
        """The context stored with checkpoint `checkpoint`, or None."""
        return await self.call("context", checkpoint=checkpoint)

    async def candidates(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Checkpoints of the current lineage, newest first (≤ `limit`, 1..80): [{id, step, label, time, branch, meta}]."""
        return await self.call("candidates", limit=limit)

    async def memory_add(self, run: str, entry: Dict[str, Any]) -> int:
        """Append `entry` (a dict) to the rewind memory of `run` (durable in the daemon); the number of entries now."""
        return (await self.call("memory_add", run=run, entry=entry))["count"]

    async def memory_get(self, run: str) -> List[Dict[str, Any]]:
        """The rewind memory of `run`: its entries in insertion order."""
        return (await self.call("memory_get", run=run))["entries"]

    async def export(self, checkpoint: int, dir: str) -> Dict[str, Any]:
        """Write checkpoint `checkpoint` as plain files into absolute directory `dir`; {files, bytes}."""
        return await self.call("export", checkpoint=checkpoint, dir=dir)

    async def pin(self, checkpoint: int, pinned: bool = True) -> Dict[str, Any]:
        """Pin (or unpin) a checkpoint: gc never removes a pinned one; CheckpointInfo."""
        return await self.call("pin", checkpoint=checkpoint, pinned=pinned)

    async def run_end(self, run: str) -> Dict[str, Any]:
        """Say that run `run` has ended (gc stops keeping its checkpoints); {run, ended}."""
        return await self.call("run_end", run=run)

    async def gc(self, keep_last: Optional[int] = None, abandoned_after_ms: Optional[int] = None,
                 run_idle_ms: Optional[int] = None, dry_run: Optional[bool] = None, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Garbage collection with a retention policy (None: the daemon's default); the GcReport."""
        args = {k: v for k, v in dict(keepLast=keep_last, abandonedAfterMs=abandoned_after_ms, runIdleMs=run_idle_ms, dryRun=dry_run).items() if v is not None}
        return await self.request("gc", args, timeout)

    async def unmount(self, discard: Optional[bool] = None) -> Dict[str, Any]:
        """Unmount the workspace (with `discard`, it gets its original content back); {discarded}."""
        return await self.call("unmount", discard=discard)

    async def subscribe(self, events: Optional[List[str]] = None) -> Dict[str, Any]:
        """Receive `events` (default all) on `self.events`; {events}."""
        return await self.call("subscribe", events=events)
