"""The conformance vectors (proto/vectors/v1.json, format in its README.md)
through the Python package, in JSON and msgpack frames, against the daemon
of REWINDFS_TEST_WORKSPACE (which holds vectors.txt = "hello\\n").
REWINDFS_VECTORS is the vectors file.
"""
import base64
import json
import os
import unittest

from rewindfs import Client, RewindError

WS = os.environ.get("REWINDFS_TEST_WORKSPACE", "")
VECTORS = os.environ.get("REWINDFS_VECTORS", "")


def lookup(name, vars):
    head, *rest = name.split(".")
    x = vars[head]
    for k in rest:
        x = x[k]
    return x


def expand(x, vars):
    """A request value with $var, $int and $bytes replaced."""
    if isinstance(x, list):
        return [expand(v, vars) for v in x]
    if not isinstance(x, dict):
        return x
    if isinstance(x.get("$var"), str):
        return expand(lookup(x["$var"], vars), vars)
    if isinstance(x.get("$int"), str):
        return int(x["$int"])
    if isinstance(x.get("$bytes"), str):
        return base64.b64decode(x["$bytes"])
    return {k: expand(v, vars) for k, v in x.items()}


def type_of(x):
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, int):
        return "integer"
    if isinstance(x, float):
        return "integer" if x.is_integer() else "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, bytes):
        return "bytes"
    if isinstance(x, list):
        return "array"
    return "object"


def mismatch(exp, got, vars, at=""):
    """None when `got` matches `exp`, else what differs and where."""
    here = at or "the result"
    if isinstance(exp, dict):
        if isinstance(exp.get("$var"), str):
            return mismatch(lookup(exp["$var"], vars), got, vars, at)
        if isinstance(exp.get("$int"), str):
            ok = type_of(got) == "integer" and int(got) == int(exp["$int"])
            return None if ok else f"{here}: expected the integer {exp['$int']}, got {got!r}"
        if isinstance(exp.get("$bytes"), str):
            return mismatch(base64.b64decode(exp["$bytes"]), got, vars, at)
        if isinstance(exp.get("$type"), str):
            t = type_of(got)
            ok = exp["$type"] in ("any", t) or (exp["$type"] == "number" and t == "integer")
            return None if ok else f"{here}: expected a value of type {exp['$type']}, got {got!r}"
        if not isinstance(got, dict):
            return f"{here}: expected a map, got {got!r}"
        keys = [k for k in exp if k != "$partial"]
        if exp.get("$partial") is not True:
            extra = [k for k in got if k not in keys]
            if extra:
                return f"{here}: unexpected keys {extra}"
        for k in keys:
            if k not in got:
                return f"{here}: missing key {k}"
            m = mismatch(exp[k], got[k], vars, f"{at}/{k}")
            if m:
                return m
        return None
    if isinstance(exp, list):
        if not isinstance(got, list) or len(got) != len(exp):
            return f"{here}: expected an array of {len(exp)}, got {got!r}"
        for i, (e, g) in enumerate(zip(exp, got)):
            m = mismatch(e, g, vars, f"{at}/{i}")
            if m:
                return m
        return None
    if isinstance(exp, bool) or exp is None or isinstance(exp, (str, bytes)):
        return None if (type(exp) is type(got) and exp == got) else f"{here}: expected {exp!r}, got {got!r}"
    if isinstance(exp, (int, float)):
        ok = not isinstance(got, bool) and isinstance(got, (int, float)) and exp == got
        return None if ok else f"{here}: expected {exp!r}, got {got!r}"
    return None if exp == got else f"{here}: expected {exp!r}, got {got!r}"


class Matcher(unittest.TestCase):
    def test_can_fail(self):
        self.assertIsNone(mismatch({"a": 1}, {"a": 1}, {}))
        self.assertIsNotNone(mismatch({"a": 1}, {"a": 2}, {}))
        self.assertIsNotNone(mismatch({"a": 1}, {"a": 1, "b": 2}, {}))
        self.assertIsNotNone(mismatch({"$type": "integer"}, True, {}))
        self.assertIsNotNone(mismatch({"$bytes": "AQID"}, b"\x01\x02\x04", {}))


@unittest.skipUnless(WS and VECTORS, "REWINDFS_TEST_WORKSPACE and REWINDFS_VECTORS are not set (run through test/client/python-client.test.ts)")
class Vectors(unittest.TestCase):
    def run_vectors(self, encoding):
        with open(VECTORS, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertGreaterEqual(len(doc["vectors"]), 30)
        vars = dict(doc.get("variables", {}), run=f"conformance-py-{encoding}")
        with Client.connect(workspace=os.path.join(WS, "below"), encoding=encoding, timeout=60) as c:
            for v in doc["vectors"]:
                with self.subTest(vector=v["name"], encoding=encoding):
                    req = expand(v["request"], vars)
                    op = req.pop("op")
                    ok, err = None, None
                    try:
                        ok = c.request(op, req)
                    except RewindError as e:
                        err = e
                    if "error" in v:
                        self.assertIsNotNone(err, f"{v['name']}: expected {v['error']['code']}, got ok {ok!r}")
                        self.assertEqual(err.code, v["error"]["code"], v["name"])
                        if "details" in v["error"]:
                            self.assertIsNone(mismatch(v["error"]["details"], err.details, vars), v["name"])
                        continue
                    self.assertIsNone(err, f"{v['name']}: {err}")
                    self.assertIsNone(mismatch(v["ok"], ok, vars), v["name"])
                    if "save" in v:
                        vars[v["save"]] = ok

    def test_json(self):
        self.run_vectors("json")

    def test_msgpack(self):
        self.run_vectors("msgpack")


if __name__ == "__main__":
    unittest.main()
