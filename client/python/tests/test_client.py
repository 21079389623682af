"""Tests of the rewindfs Python package against a live daemon.

Run by test/client/python-client.test.ts, which installs the package into a venv and
mounts a workspace: REWINDFS_TEST_WORKSPACE is the mounted workspace (it
holds a file `a.txt`), REWINDFS_RUNTIME_DIR the daemon's runtime directory.
"""
import asyncio
import os
import unittest

import rewindfs
from rewindfs import AsyncClient, Client, RewindError, Runner

WS = os.environ.get("REWINDFS_TEST_WORKSPACE", "")


def need_daemon(cls):
    return unittest.skipUnless(WS, "REWINDFS_TEST_WORKSPACE is not set (run through test/client/python-client.test.ts)")(cls)


class Installed(unittest.TestCase):
    def test_imported_from_the_install(self):
        want = os.environ.get("REWINDFS_EXPECT_PREFIX")
        if want:
            self.assertTrue(os.path.realpath(rewindfs.__file__).startswith(os.path.realpath(want)), rewindfs.__file__)

    def test_tool_definitions(self):
        names = [t["name"] for t in rewindfs.BACKTRACK_TOOLS]
        self.assertEqual(names, ["backtrack_candidates", "backtrack_commit"])
        self.assertEqual(rewindfs.openai_tools()[1]["function"]["parameters"]["required"], ["checkpoint_id", "memory", "reason"])
        self.assertEqual(rewindfs.anthropic_tools()[0]["input_schema"]["required"], ["reason"])

    def test_commit_args_refuse_current_state(self):
        with self.assertRaises(rewindfs.ToolArgumentError) as e:
            rewindfs.tools.parse_commit_args({"checkpoint_id": 1, "reason": "r", "memory": {
                "tried": "", "why_abandoned": "", "instead": "", "facts": [], "milestones": [], "current_state": "x"}})
        self.assertEqual(e.exception.field, "memory.current_state")

    def test_discovery_key(self):
        import hashlib
        self.assertEqual(rewindfs.discovery_key("/home/a/proj/"), hashlib.sha256(b"/home/a/proj").hexdigest()[:32])
        self.assertEqual(rewindfs.runtime_dirs({"REWINDFS_RUNTIME_DIR": "/x"}, 5), ["/x"])
        self.assertEqual(rewindfs.runtime_dirs({}, 5), ["/run/rewindfs", "/tmp/rewindfs-5"])


@need_daemon
class Sync(unittest.TestCase):
    def test_discovery_from_inside_and_outside(self):
        info = rewindfs.discover(os.path.join(WS, "no", "such", "dir"))
        self.assertIsNotNone(info)
        self.assertEqual(info["workspace"], os.path.realpath(WS))
        self.assertIsNone(rewindfs.discover(os.path.dirname(os.path.realpath(WS))))
        with self.assertRaises(RewindError) as e:
            Client.connect(workspace=os.path.dirname(os.path.realpath(WS)))
        self.assertEqual(e.exception.code, "E_DISCOVERY")

    def test_values_round_trip_in_both_encodings(self):
        ctx = {"big": 2 ** 64 - 1, "neg": -2 ** 63, "f": 0.1, "b": b"\x00\xff", "nested": [{"b": b"x"}, None, True], "s": "é"}
        for enc in ("json", "msgpack"):
            with Client.connect(workspace=WS, encoding=enc) as c:
                cp = c.mark(f"values {enc}", context=ctx)
                self.assertIsInstance(cp["time"], int)
                for enc2 in ("json", "msgpack"):
                    with Client.connect(workspace=WS, encoding=enc2) as d:
                        self.assertEqual(d.context(cp["id"]), ctx, f"stored over {enc}, read over {enc2}")

    def test_restore_and_errors(self):
        path = os.path.join(WS, "a.txt")
        with Client.connect(workspace=WS) as c:
            with open(path, "w") as f:
                f.write("one\n")
            cp = c.mark("one")
            with open(path, "w") as f:
                f.write("two\n")
            r = c.restore(cp["id"])
            self.assertEqual(r["checkpoint"], cp["id"])
            with open(path) as f:
                self.assertEqual(f.read(), "one\n")
            self.assertEqual(c.read("a.txt", checkpoint=cp["id"]), b"one\n")
            with self.assertRaises(RewindError) as e:
                c.restore(10 ** 9)
            self.assertEqual(e.exception.code, "E_UNKNOWN_CHECKPOINT")
            self.assertEqual(e.exception.details, {"checkpoint": 10 ** 9})
            with self.assertRaises(RewindError) as e:
                c.read("../etc/passwd")
            self.assertEqual((e.exception.code, e.exception.details), ("E_BAD_REQUEST", {"field": "path"}))

    def test_selective_restore_undo_history_blame(self):
        a, b = os.path.join(WS, "sel-a.txt"), os.path.join(WS, "sel-b.txt")
        with Client.connect(workspace=WS) as c:
            for p, t in ((a, "a1\n"), (b, "b1\n")):
                with open(p, "w") as f:
                    f.write(t)
            one = c.mark("sel one", meta={"step": 1})
            for p, t in ((a, "a2\n"), (b, "b2\n")):
                with open(p, "w") as f:
                    f.write(t)
            two = c.mark("sel two", meta={"step": 2})
            dry = c.restore(one["id"], paths=["sel-a.txt"], dry_run=True)
            self.assertTrue(dry["dryRun"])
            self.assertEqual([x["path"].lstrip("/") for x in dry["changes"]], ["sel-a.txt"])
            with open(a) as f:
                self.assertEqual(f.read(), "a2\n", "a dry run changes nothing")
            r = c.restore(one["id"], paths=["sel-a.txt"])
            self.assertEqual(r["paths"], ["sel-a.txt"])
            self.assertIsNotNone(r["result"])
            with open(a) as f, open(b) as g:
                self.assertEqual((f.read(), g.read()), ("a1\n", "b2\n"), "only the path given goes back")
            hist = c.history("sel-b.txt")
            self.assertEqual([h["checkpoint"] for h in hist][:2], [two["id"], one["id"]], "b changed at two and at one, newest first")
            blame = c.blame("sel-b.txt")
            self.assertEqual(blame[0]["meta"], {"step": 2}, "blame carries the segment metadata")
            u = c.undo(r["result"])
            self.assertTrue(u["applied"], u)
            with open(a) as f, open(b) as g:
                self.assertEqual((f.read(), g.read()), ("a2\n", "b2\n"), "undo of the selective restore puts a back as it was before it")
            with self.assertRaises(RewindError) as e:
                c.history("../x")
            self.assertEqual(e.exception.code, "E_BAD_REQUEST")

    def test_events(self):
        with Client.connect(workspace=WS, encoding="msgpack") as c:
            c.subscribe(["checkpoint"])
            cp = c.mark("evented")
            ev = c.next_event(timeout=10)
            self.assertEqual((ev["event"], ev["checkpoint"]["id"]), ("checkpoint", cp["id"]))


@need_daemon
class Async(unittest.TestCase):
    def test_concurrent_requests(self):
        async def main():
            async with await AsyncClient.connect(workspace=WS) as c:
                a, b, s = await asyncio.gather(c.mark("a"), c.mark("b"), c.status())
                self.assertNotEqual(a["id"], b["id"])
                self.assertEqual(s["workspace"], os.path.realpath(WS))
        asyncio.run(main())

    def test_history_and_undo(self):
        path = os.path.join(WS, "aio-undo.txt")

        async def main():
            async with await AsyncClient.connect(workspace=WS) as c:
                with open(path, "w") as f:
                    f.write("x\n")
                cp = await c.mark("aio undo")
                hist, dry = await asyncio.gather(c.history("aio-undo.txt", limit=5), c.undo(cp["id"], dry_run=True))
                self.assertEqual(hist[0]["checkpoint"], cp["id"])
                self.assertTrue(os.path.exists(path), "a dry run changes nothing")
                await c.undo(cp["id"])
                self.assertFalse(os.path.exists(path), "undo removes the file the segment created")
        asyncio.run(main())

    def test_attribution_candidate_files_and_localise(self):
        """call_begin/call_end attribute this process's writes to the call; backtrack_candidates with files lists
        each segment's files; backtrack_localise finds the step at which a check starts failing."""
        from rewindfs.tools import backtrack_candidates, backtrack_localise, ToolArgumentError
        flag = os.path.join(WS, "py-localise-flag.txt")

        async def main():
            async with await AsyncClient.connect(workspace=WS) as c:
                call = await c.call_begin("write_flag", args={"path": "py-localise-flag.txt"})
                self.assertIn(call["mechanism"], ("cgroup", "pid"))
                with open(flag, "w") as f:
                    f.write("bad\n")
                ended = await c.call_end(call["call"], 0)
                self.assertEqual(ended["exitStatus"], 0)
                bad = await c.mark("py flag written")
                good = (await c.candidates(2))[1]["id"]
                cands = await c.candidates(1)
                mine = [k for k in cands[0]["calls"]["calls"] if k["call"] == call["call"]]
                self.assertEqual([f["path"] for f in mine[0]["created"]], ["py-localise-flag.txt"])
                listed = await backtrack_candidates(c, {"reason": "which step wrote the flag", "files": True}, limit=2)
                self.assertIn(f"A py-localise-flag.txt (call {call['call']}: write_flag)", listed["candidates"][0]["files"])
                found = await backtrack_localise(c, {"command": ["sh", "-c", "test ! -e py-localise-flag.txt"], "good": good, "reason": "the flag must not exist"})
                self.assertEqual((found["first_bad"], found["last_good"]), (bad["id"], good))
                self.assertTrue(any("py-localise-flag.txt" in line for line in found["files"]))
                with self.assertRaises(ToolArgumentError):
                    await backtrack_localise(c, {"command": [], "reason": "x"})
                os.remove(flag)
        asyncio.run(main())

    def test_runner_rewind_depths(self):
        path = os.path.join(WS, "depth.txt")

        def run(runner_depth, commit_depth):
            seen, marks = [], []

            def model(messages, tools):
                seen.append(messages)
                if len(seen) == 1:
                    return {"content": "", "tool_calls": [{"id": "1", "name": "write", "arguments": {"text": "bad"}}]}
                if len(seen) == 2:
                    args = {"checkpoint_id": marks[0], "reason": "bad write",
                            "memory": {"tried": "bad", "why_abandoned": "bad", "instead": "good", "facts": [], "milestones": []}}
                    if commit_depth is not None:
                        args["depth"] = commit_depth
                    return {"content": "", "tool_calls": [{"id": "2", "name": "backtrack_commit", "arguments": args}]}
                return {"content": "done", "tool_calls": []}

            def execute(call):
                with open(path, "w") as f:
                    f.write(call["arguments"]["text"])
                return {"ok": True}

            async def main():
                async with await AsyncClient.connect(workspace=WS) as c:
                    with open(path, "w") as f:
                        f.write("start")
                    orig = c.mark

                    async def mark(*a, **k):
                        cp = await orig(*a, **k)
                        marks.append(cp["id"])
                        return cp
                    c.mark = mark  # type: ignore[method-assign]
                    r = Runner(c, model, execute, run=f"py-depth-{runner_depth}-{commit_depth}", rewind_depth=runner_depth,
                               tools=[{"name": "write", "description": "write", "parameters": {"type": "object"}}])
                    return await r.run([{"role": "user", "content": "task"}])
            res = asyncio.run(main())
            with open(path) as f:
                return res, seen, f.read()

        res, seen, text = run("context", None)
        self.assertEqual(res.rewinds[0]["depth"], "context", "the runner's depth when the call names none")
        self.assertEqual(text, "bad", "depth context keeps the files")
        self.assertEqual(seen[-1][-1]["name"], "rewind_memory", "and rebuilds the context with the memory")
        res, seen, text = run("context", "workspace")
        self.assertEqual(res.rewinds[0]["depth"], "workspace", "the call's depth wins")
        self.assertEqual(text, "start", "depth workspace restores the files")
        self.assertTrue(any(m.get("role") == "tool" and "write" in str(m.get("name", "")) for m in seen[-1]), "and keeps the conversation (the abandoned write is still in it)")
        self.assertIn('"depth": "workspace"', seen[-1][-1]["content"])
        with self.assertRaises(ValueError):
            Runner(None, None, None, run="x", rewind_depth="deep")  # type: ignore[arg-type]

    def test_runner_rewinds_files_and_context(self):
        path = os.path.join(WS, "runner.txt")
        seen = []

        def model(messages, tools):
            seen.append(messages)
            n = len(seen)
            if n == 1:
                return {"content": "", "tool_calls": [{"id": "1", "name": "write", "arguments": {"text": "bad"}}]}
            if n == 2:
                first = [m for m in messages if m.get("role") == "assistant"]
                self.assertTrue(first)
                return {"content": "", "tool_calls": [{"id": "2", "name": "backtrack_commit", "arguments": {
                    "checkpoint_id": runner_checkpoints[0], "reason": "bad write",
                    "memory": {"tried": "writing bad", "why_abandoned": "it is bad", "instead": "write good", "facts": ["f1"], "milestones": []}}}]}
            return {"content": "done", "tool_calls": []}

        def execute(call):
            with open(path, "w") as f:
                f.write(call["arguments"]["text"])
            return {"ok": True}

        runner_checkpoints = []

        async def main():
            async with await AsyncClient.connect(workspace=WS, encoding="msgpack") as c:
                with open(path, "w") as f:
                    f.write("start")
                r = Runner(c, model, execute, run="py-runner", tools=[{"name": "write", "description": "write", "parameters": {"type": "object"}}])
                orig_mark = c.mark

                async def mark(*a, **k):
                    cp = await orig_mark(*a, **k)
                    runner_checkpoints.append(cp["id"])
                    return cp
                c.mark = mark  # type: ignore[method-assign]
                return await r.run([{"role": "user", "content": "task"}])

        res = asyncio.run(main())
        self.assertEqual(res.stopped, "finished")
        self.assertEqual(len(res.rewinds), 1)
        with open(path) as f:
            self.assertEqual(f.read(), "start", "the workspace went back with the context")
        last = seen[-1]
        self.assertEqual(last[0], {"role": "user", "content": "task"})
        self.assertEqual(last[-1]["name"], "rewind_memory")
        self.assertIn("Tried: writing bad", last[-1]["content"])
        self.assertFalse(any(m.get("role") == "assistant" for m in last), "the abandoned turn is gone")


if __name__ == "__main__":
    unittest.main()
