"""Client: the synchronous API, built on AsyncClient (Debian 12's websockets
10.4 has no sync client). The asyncio client runs on a private event loop in
a daemon thread; each method waits for its result.

    import rewindfs
    with rewindfs.Client.connect(workspace="/path/to/ws") as c:
        cp = c.mark("before refactor", context={"messages": []})
        c.restore(cp["id"])

Same methods, arguments and errors (RewindError) as AsyncClient.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Awaitable, Dict, List, Optional, TypeVar

from .aio import DEFAULT_TIMEOUT, AsyncClient

T = TypeVar("T")


class Client:
    """A synchronous connection to the daemon. Create with Client.connect(...)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread, client: AsyncClient) -> None:
        """Use connect()."""
        self._loop = loop
        self._thread = thread
        self.aio = client
        self.server = client.server

    @classmethod
    def connect(cls, workspace: Optional[str] = None, *, store: Optional[str] = None, url: Optional[str] = None,
                socket: Optional[str] = None, token: Optional[str] = None, encoding: str = "json",
                timeout: float = DEFAULT_TIMEOUT) -> "Client":
        """Connect as AsyncClient.connect does (discovery from `workspace`, default the current directory)."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="rewindfs-client", daemon=True)
        thread.start()
        try:
            fut = asyncio.run_coroutine_threadsafe(AsyncClient.connect(
                workspace, store=store, url=url, socket=socket, token=token, encoding=encoding, timeout=timeout), loop)
            client = fut.result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        return cls(loop, thread, client)

    @classmethod
    def from_store(cls, store_dir: str, timeout: float = DEFAULT_TIMEOUT) -> "Client":
        """Connect with `<store_dir>/daemon.json` and `<store_dir>/token`."""
        return cls.connect(store=store_dir, timeout=timeout)

    def _run(self, aw: Awaitable[T]) -> T:
        return asyncio.run_coroutine_threadsafe(aw, self._loop).result()  # type: ignore[arg-type]

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection and stop the loop thread (idempotent)."""
        if self._loop.is_closed():
            return
        try:
            self._run(self.aio.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def next_event(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """The next event after subscribe(); raises TimeoutError after `timeout` seconds."""
        return asyncio.run_coroutine_threadsafe(asyncio.wait_for(self.aio.events.get(), timeout), self._loop).result()

    def request(self, op: str, args: Dict[str, Any], timeout: Optional[float] = None) -> Any:
        """Send `op` with exactly `args`; the reply's `ok` (see AsyncClient.request)."""
        return self._run(self.aio.request(op, args, timeout))

    def call(self, op: str, **args: Any) -> Any:
        """Send `op` with `args` (None dropped); the reply's `ok`."""
        return self._run(self.aio.call(op, **args))

    def hello(self, client: Optional[str] = None) -> Dict[str, Any]:
        return self._run(self.aio.hello(client))

    def status(self) -> Dict[str, Any]:
        return self._run(self.aio.status())

    def mark(self, label: Optional[str] = None, context: Any = None, meta: Any = None) -> Dict[str, Any]:
        return self._run(self.aio.mark(label, context, meta))

    def restore(self, checkpoint: int, paths: Optional[List[str]] = None, dry_run: Optional[bool] = None) -> Dict[str, Any]:
        return self._run(self.aio.restore(checkpoint, paths, dry_run))

    def undo(self, checkpoint: int, dry_run: Optional[bool] = None) -> Dict[str, Any]:
        return self._run(self.aio.undo(checkpoint, dry_run))

    def history(self, path: str, all_branches: Optional[bool] = None, limit: Optional[int] = None,
                meta: Optional[bool] = None) -> List[Dict[str, Any]]:
        return self._run(self.aio.history(path, all_branches, limit, meta))

    def blame(self, path: str, all_branches: Optional[bool] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        return self._run(self.aio.blame(path, all_branches, limit))

    def call_begin(self, tool: str, pid: Optional[int] = None, args: Any = None) -> Dict[str, Any]:
        return self._run(self.aio.call_begin(tool, pid, args))

    def call_end(self, call: int, exit_status: Optional[int] = None) -> Dict[str, Any]:
        return self._run(self.aio.call_end(call, exit_status))

    def log(self, branch: Optional[str] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        return self._run(self.aio.log(branch, limit))

    def diff(self, a: int, b: Optional[int] = None) -> List[Dict[str, Any]]:
        return self._run(self.aio.diff(a, b))

    def stat(self, path: str, checkpoint: Optional[int] = None) -> Optional[Dict[str, Any]]:
        return self._run(self.aio.stat(path, checkpoint))

    def readdir(self, path: str, checkpoint: Optional[int] = None) -> List[Dict[str, Any]]:
        return self._run(self.aio.readdir(path, checkpoint))

    def read(self, path: str, checkpoint: Optional[int] = None, offset: Optional[int] = None, length: Optional[int] = None) -> bytes:
        return self._run(self.aio.read(path, checkpoint, offset, length))

    def context(self, checkpoint: int) -> Any:
        return self._run(self.aio.context(checkpoint))

    def candidates(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        return self._run(self.aio.candidates(limit))

    def memory_add(self, run: str, entry: Dict[str, Any]) -> int:
        return self._run(self.aio.memory_add(run, entry))

    def memory_get(self, run: str) -> List[Dict[str, Any]]:
        return self._run(self.aio.memory_get(run))

    def export(self, checkpoint: int, dir: str) -> Dict[str, Any]:
        return self._run(self.aio.export(checkpoint, dir))

    def pin(self, checkpoint: int, pinned: bool = True) -> Dict[str, Any]:
        return self._run(self.aio.pin(checkpoint, pinned))

    def run_end(self, run: str) -> Dict[str, Any]:
        return self._run(self.aio.run_end(run))

    def gc(self, keep_last: Optional[int] = None, abandoned_after_ms: Optional[int] = None,
           run_idle_ms: Optional[int] = None, dry_run: Optional[bool] = None, timeout: Optional[float] = None) -> Dict[str, Any]:
        return self._run(self.aio.gc(keep_last, abandoned_after_ms, run_idle_ms, dry_run, timeout))

    def unmount(self, discard: Optional[bool] = None) -> Dict[str, Any]:
        return self._run(self.aio.unmount(discard))

    def subscribe(self, events: Optional[List[str]] = None) -> Dict[str, Any]:
        return self._run(self.aio.subscribe(events))
