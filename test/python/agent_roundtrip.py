"""End-to-end run of client/python/rewindfs_client.py against a live daemon.

usage: agent_roundtrip.py STORE_DIR WORKSPACE_DIR

Marks a checkpoint carrying a context and segment metadata, lists the
candidates, changes notes.txt in the workspace, restores the checkpoint,
reads its context back, adds a rewind memory entry, pins the checkpoint,
ends the run, asks gc for a dry run, and prints one JSON
object with what it saw (test/client/agent-ops.test.ts asserts on it). Errors from
the daemon are printed as {"error": code}.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client", "python"))
from rewindfs_client import RewindClient, RewindError  # noqa: E402


def main(store, workspace):
    """Run the round trip and return the dict to print."""
    out = {}
    with RewindClient.from_store(store) as c:
        out["status_workspace"] = c.status()["workspace"]
        context = {"messages": [{"role": "user", "content": "fix the build"}], "turn": 3}
        cp = c.mark("before edit", context=context, meta={"tools": ["sed"]})
        out["mark"] = cp
        out["candidates"] = c.candidates(limit=5)
        with open(os.path.join(workspace, "notes.txt"), "w") as f:
            f.write("changed by the agent\n")
        out["restore"] = c.restore(cp["id"])
        out["context"] = c.context(cp["id"])
        out["memory_count"] = c.memory_add("py-run", {"tried": "edit notes", "why": "test"})
        out["memory"] = c.memory_get("py-run")
        out["log_ids"] = [x["id"] for x in c.log(limit=10)]
        out["pin"] = c.pin(cp["id"])
        out["run_end"] = c.run_end("py-run")
        out["gc"] = c.gc(keep_last=0, abandoned_after_ms=0, dry_run=True)
        try:
            c.restore(999999)
        except RewindError as e:
            out["error"] = e.code
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
