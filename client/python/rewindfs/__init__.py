"""Python client of the rewindfs daemon (proto/PROTOCOL.md).

AsyncClient (asyncio) and Client (sync, built on it) connect to the daemon
found from a workspace path (discover), a store directory, a URL or a unix
socket, in JSON or msgpack frames. tools: the backtrack tool definitions and
their implementation; runner: a small agent loop with them.
"""
from .aio import PROTOCOL_VERSION, AsyncClient
from .discover import discover, discovery_key, runtime_dirs
from .errors import RewindError
from .runner import Runner, RunResult
from .sync import Client
from .tools import BACKTRACK_TOOLS, LOCALISE_TOOL, ToolArgumentError, anthropic_tools, backtrack_candidates, backtrack_commit, backtrack_localise, openai_tools

__all__ = ["AsyncClient", "Client", "RewindError", "discover", "discovery_key", "runtime_dirs", "Runner", "RunResult",
           "BACKTRACK_TOOLS", "LOCALISE_TOOL", "openai_tools", "anthropic_tools", "backtrack_candidates", "backtrack_commit",
           "backtrack_localise", "ToolArgumentError",
           "PROTOCOL_VERSION"]
__version__ = "0.1.0"
