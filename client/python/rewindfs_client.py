"""A small synchronous Python client of the rewindfs daemon.

Speaks the wire protocol of proto/PROTOCOL.md with JSON text frames over a
websocket, using only the standard library and the `websockets` package
(Debian: python3-websockets). When the installed websockets has the sync API
(`websockets.sync.client`, version 11 and later) it is used; otherwise
(Debian 12 ships 10.4) the asyncio API runs on a private event loop behind
the same synchronous methods.

    from rewindfs_client import RewindClient
    with RewindClient.from_store("/path/to/store") as c:
        cp = c.mark("before refactor", context={"messages": []})
        c.restore(cp["id"])

Every error reply raises RewindError(code, message, details); a connection
problem raises RewindError with code "E_CONNECTION" (local, not a protocol
code), a missing reply within the timeout "E_TIMEOUT".
"""
import asyncio
import json
import os
import stat

import websockets

try:
    from websockets.sync.client import connect as _sync_connect, unix_connect as _sync_unix_connect
except ImportError:  # websockets < 11: asyncio only
    _sync_connect = _sync_unix_connect = None

PROTOCOL_VERSION = 1
DEFAULT_TIMEOUT = 30.0
# the server's default maxPayload (64 MiB) plus framing slack
MAX_FRAME = 64 * 1024 * 1024 + 1024 * 1024


class RewindError(Exception):
    """An error reply from the daemon (or a local failure).

    code: the stable protocol code ("E_UNKNOWN_CHECKPOINT", ...; branch on it),
    or the local "E_CONNECTION" / "E_TIMEOUT"; message: for people;
    details: whatever the daemon attached, or None.
    """

    def __init__(self, code, message, details=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details


def read_token(path):
    """Return the token in file `path`, refusing a file group or others can access."""
    mode = os.stat(path).st_mode
    if mode & 0o077:
        raise RewindError("E_CONNECTION", f"token file {path} has mode {stat.S_IMODE(mode):o}: "
                          f"group or others can access it; refusing it (chmod 600 {path})")
    with open(path, encoding="ascii") as f:
        return f.read().strip()


def read_connection_file(store_dir):
    """Return `<store_dir>/daemon.json` as a dict {port, socket, pid, workspace}."""
    path = os.path.join(store_dir, "daemon.json")
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError) as e:
        raise RewindError("E_CONNECTION", f"cannot read connection file {path}: {e} (is the daemon running?)")
    if not isinstance(info, dict) or (info.get("port") is None and info.get("socket") is None):
        raise RewindError("E_CONNECTION", f"connection file {path} is malformed")
    return info


class _AsyncTransport:
    """websockets < 11: the asyncio client run on a private event loop."""

    def __init__(self, info, headers, timeout):
        """Connect to the daemon described by `info` with `headers`."""
        self.loop = asyncio.new_event_loop()
        kw = dict(extra_headers=headers, compression=None, max_size=MAX_FRAME, open_timeout=timeout)

        async def opening():
            # created inside the loop: websockets 10 binds to the loop running at construction
            if info.get("socket"):
                return await websockets.unix_connect(info["socket"], "ws://localhost/", **kw)
            return await websockets.connect(f"ws://127.0.0.1:{info['port']}/", **kw)
        try:
            self.ws = self.loop.run_until_complete(opening())
        except BaseException:
            self.loop.close()
            raise

    def send(self, text):
        """Send one text frame."""
        self.loop.run_until_complete(self.ws.send(text))

    def recv(self, timeout):
        """Return the next frame, waiting at most `timeout` seconds (TimeoutError)."""
        return self.loop.run_until_complete(asyncio.wait_for(self.ws.recv(), timeout))

    def close(self):
        """Close the connection and the loop."""
        try:
            self.loop.run_until_complete(self.ws.close())
        finally:
            self.loop.close()


class _SyncTransport:
    """websockets >= 11: the sync client."""

    def __init__(self, info, headers, timeout):
        """Connect to the daemon described by `info` with `headers`."""
        kw = dict(additional_headers=headers, compression=None, max_size=MAX_FRAME, open_timeout=timeout)
        if info.get("socket"):
            self.ws = _sync_unix_connect(info["socket"], "ws://localhost/", **kw)
        else:
            self.ws = _sync_connect(f"ws://127.0.0.1:{info['port']}/", **kw)

    def send(self, text):
        """Send one text frame."""
        self.ws.send(text)

    def recv(self, timeout):
        """Return the next frame, waiting at most `timeout` seconds (TimeoutError)."""
        return self.ws.recv(timeout=timeout)

    def close(self):
        """Close the connection."""
        self.ws.close()


class RewindClient:
    """One connection to the daemon; one request at a time (events are skipped).

    Checkpoint ids are integers; results are the JSON shapes of
    proto/PROTOCOL.md §4 (dicts and lists).
    """

    def __init__(self, info, token, timeout=DEFAULT_TIMEOUT):
        """Connect to `info` ({port} or {socket}) with `token`; say hello."""
        headers = {"Authorization": f"Bearer {token}"}  # and no Origin: browsers are refused
        transport = _SyncTransport if _sync_connect is not None else _AsyncTransport
        self.timeout = timeout
        self._next_id = 1
        try:
            self._t = transport(info, headers, timeout)
        except Exception as e:  # refused upgrade (401, 403), no daemon, ...
            status = getattr(e, "status_code", None) or getattr(getattr(e, "response", None), "status_code", None)
            if status == 401:
                raise RewindError("E_UNAUTHORIZED", "the daemon refused the token (HTTP 401)") from e
            raise RewindError("E_CONNECTION", f"cannot connect to the daemon: {e}") from e
        self.server = self.call("hello", client="rewindfs_client.py/0.1")

    @classmethod
    def from_store(cls, store_dir, timeout=DEFAULT_TIMEOUT):
        """Connect using `<store_dir>/daemon.json` and `<store_dir>/token` (must be mode 0600)."""
        info = read_connection_file(store_dir)
        return cls(info, read_token(os.path.join(store_dir, "token")), timeout)

    def __enter__(self):
        """Use as a context manager; the connection closes on exit."""
        return self

    def __exit__(self, *exc):
        """Close the connection."""
        self.close()

    def close(self):
        """Close the connection (idempotent)."""
        t, self._t = getattr(self, "_t", None), None
        if t is not None:
            t.close()

    def call(self, op, **args):
        """Send request `op` with `args` (None values dropped) and return its `ok`; raise RewindError."""
        if self._t is None:
            raise RewindError("E_CONNECTION", "client closed")
        rid = self._next_id
        self._next_id += 1
        req = {k: v for k, v in args.items() if v is not None}
        req.update(v=PROTOCOL_VERSION, id=rid, op=op)
        try:
            self._t.send(json.dumps(req))
            while True:
                msg = json.loads(self._t.recv(self.timeout))
                if isinstance(msg, dict) and "event" not in msg and msg.get("id") in (rid, None):
                    break
        except (asyncio.TimeoutError, TimeoutError) as e:
            raise RewindError("E_TIMEOUT", f"{op}: no reply within {self.timeout} s") from e
        except websockets.exceptions.ConnectionClosed as e:
            code = "E_TOO_LARGE" if getattr(e, "code", None) == 1009 else "E_CONNECTION"
            raise RewindError(code, f"{op}: connection lost: {e}") from e
        if "error" in msg:
            err = msg["error"]
            raise RewindError(err.get("code", "E_INTERNAL"), err.get("message", ""), err.get("details"))
        return msg["ok"]

    # ------------------------------------------------------------ operations

    def status(self):
        """Return StatusInfo: workspace, store, branch, head, generation, checkpoints, inodes, ..."""
        return self.call("status")

    def mark(self, label=None, context=None, meta=None):
        """Seal the workspace as a checkpoint with `label`, the agent's `context` and segment `meta` (any JSON); return CheckpointInfo."""
        return self.call("mark", label=label, context=context, meta=meta)

    def candidates(self, limit=None):
        """Return the checkpoints on the current lineage, newest first, at most `limit` (1..80, default 80): [{id, step, label, time, branch, meta}]."""
        return self.call("candidates", limit=limit)

    def restore(self, checkpoint_id):
        """Restore checkpoint `checkpoint_id` exactly; return RestoreInfo {checkpoint, branch, changed, ms, saved}."""
        return self.call("restore", checkpoint=checkpoint_id)

    def context(self, checkpoint_id):
        """Return the context stored with checkpoint `checkpoint_id`, or None."""
        return self.call("context", checkpoint=checkpoint_id)

    def memory_add(self, run, entry):
        """Append `entry` (a dict) to the rewind memory of `run` (kept by the daemon, durable); return the number of entries now."""
        return self.call("memory_add", run=run, entry=entry)["count"]

    def memory_get(self, run):
        """Return the rewind memory of `run`: a list of dicts in insertion order."""
        return self.call("memory_get", run=run)["entries"]

    def log(self, branch=None, limit=None):
        """Return CheckpointInfo of every checkpoint (or of `branch`), newest first, at most `limit` (default 100)."""
        return self.call("log", branch=branch, limit=limit)

    def pin(self, checkpoint_id, pinned=True):
        """Pin (or, with pinned=False, unpin) checkpoint `checkpoint_id`: gc never removes a pinned checkpoint; return CheckpointInfo."""
        return self.call("pin", checkpoint=checkpoint_id, pinned=pinned)

    def run_end(self, run):
        """Say that run `run` has ended: gc stops keeping the checkpoints whose context names it; return {run, ended}."""
        return self.call("run_end", run=run)

    def gc(self, keep_last=None, abandoned_after_ms=None, run_idle_ms=None, dry_run=None):
        """Garbage collection with a retention policy (None: the daemon's default); return the GcReport (see PROTOCOL.md "gc")."""
        return self.call("gc", keepLast=keep_last, abandonedAfterMs=abandoned_after_ms, runIdleMs=run_idle_ms, dryRun=dry_run)


if __name__ == "__main__":
    import sys
    if len(sys.argv) < 3:
        sys.exit("usage: rewindfs_client.py STORE_DIR OP [JSON_ARGS]\n"
                 "e.g.   rewindfs_client.py ~/.rewindfs/stores/x candidates '{\"limit\": 5}'")
    with RewindClient.from_store(sys.argv[1]) as client:
        try:
            result = client.call(sys.argv[2], **(json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}))
        except RewindError as err:
            sys.exit(str(err))
        print(json.dumps(result, indent=2))
