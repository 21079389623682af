"""Frames of the wire protocol (proto/PROTOCOL.md §2 and "Values").

msgpack: binary frames, bytes are bin, integers up to 2^64-1.
JSON: text frames; bytes inside a message are base64 strings named by the
message's top-level "bytes" field (JSON Pointers, RFC 6901); a `read` reply
carries its bytes as base64 with "encoding": "base64".
"""
from __future__ import annotations

import base64
import json
from typing import Any, List, Tuple, Union

import msgpack

ENCODINGS = ("json", "msgpack")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _bytes_out(x: Any, at: str, found: List[str]) -> Any:
    if isinstance(x, (bytes, bytearray, memoryview)):
        found.append(at)
        return base64.b64encode(bytes(x)).decode("ascii")
    if isinstance(x, dict):
        return {k: _bytes_out(v, f"{at}/{_escape(str(k))}", found) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_bytes_out(v, f"{at}/{i}", found) for i, v in enumerate(x)]
    return x


def encode(msg: dict, encoding: str) -> Union[str, bytes]:
    """One frame for `msg`: str (a text frame) for "json", bytes (a binary frame) for "msgpack"."""
    if encoding == "msgpack":
        return msgpack.packb(msg, use_bin_type=True)
    if encoding != "json":
        raise ValueError(f"encoding must be 'json' or 'msgpack', got {encoding!r}")
    found: List[str] = []
    out = _bytes_out(msg, "", found)
    if found:
        out["bytes"] = found
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _set_at(root: Any, pointer: str, fn) -> None:
    parts = [_unescape(p) for p in pointer.split("/")[1:]]
    if not parts:
        return
    cur = root
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    last = parts[-1]
    if isinstance(cur, list):
        cur[int(last)] = fn(cur[int(last)])
    else:
        cur[last] = fn(cur[last])


def decode(frame: Union[str, bytes], is_binary: bool) -> Tuple[Any, str]:
    """The message in a frame and its encoding; bytes come back as `bytes` in both encodings."""
    if is_binary:
        return msgpack.unpackb(frame, raw=False, strict_map_key=False), "msgpack"
    msg = json.loads(frame)
    if isinstance(msg, dict):
        if msg.get("encoding") == "base64" and isinstance(msg.get("ok"), str):
            msg["ok"] = base64.b64decode(msg["ok"])
            del msg["encoding"]
        ptrs = msg.pop("bytes", None)
        if isinstance(ptrs, list):
            for p in ptrs:
                _set_at(msg, p, lambda s: base64.b64decode(s) if isinstance(s, str) else s)
    return msg, "json"
