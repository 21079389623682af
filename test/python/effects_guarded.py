"""Run by test/effects/effects-cli.test.ts against a mounted workspace: argv[1] is the
store. Exercises client/python/rewindfs_effects.py's guarded_call: confirmed,
a refused repeat (nothing called), a timeout recorded unknown, an error that
proves nothing was sent recorded failed. Prints one JSON line of results."""
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "client", "python"))
from rewindfs_client import RewindClient  # noqa: E402
from rewindfs_effects import EffectCallFailed, EffectRefused, gate_message, guarded_call  # noqa: E402

out = {}
calls = []
with RewindClient.from_store(sys.argv[1]) as c:
    c.call("effect_register", tool="py_ticket", **{"class": "compensable"})
    r = guarded_call(c, "py_ticket", "http://tracker/py", lambda occ: calls.append(occ["identity"]) or {"id": 7},
                     request={"method": "POST", "body": {"title": "t"}}, outcome=lambda res: ("confirmed", {"ticket": res["id"], "big": 18446744073709551615}))
    out["first"] = r["status"]
    try:
        guarded_call(c, "py_ticket", "http://tracker/py", lambda occ: calls.append("again"), request={"method": "POST", "body": {"title": "t"}})
        out["repeat"] = "allowed"
    except EffectRefused as e:
        out["repeat"] = e.code
        out["message"] = gate_message(e)
    try:
        guarded_call(c, "py_ticket", "http://tracker/slow", lambda occ: time.sleep(2), identity="slow", timeout=0.2)
    except EffectCallFailed as e:
        out["timeout"] = e.status
    try:
        guarded_call(c, "py_ticket", "http://tracker/refused", lambda occ: (_ for _ in ()).throw(ConnectionRefusedError(111, "refused")), identity="refused")
    except EffectCallFailed as e:
        out["refused"] = e.status
    listed = c.call("effect_list", target="http://tracker/py")
    out["evidence"] = listed[0]["history"][-1]["evidence"]
out["calls"] = len(calls)
print(json.dumps(out))
