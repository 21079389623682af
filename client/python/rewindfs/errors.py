"""Errors of the rewindfs client.

RewindError carries the protocol's stable code (proto/PROTOCOL.md "Errors"),
or one of the local codes: E_CONNECTION (cannot connect, connection lost,
client closed), E_TIMEOUT (no reply in time), E_DISCOVERY (no daemon found
for a workspace path, or its connection file is refused).
"""
from __future__ import annotations

from typing import Any, Optional


class RewindError(Exception):
    """An error reply from the daemon, or a local failure.

    code: "E_UNKNOWN_CHECKPOINT", ... (branch on it); message: for people;
    details: what the daemon attached (for E_BAD_REQUEST {"field": ...}), or None;
    op: the operation that failed, when known.
    """

    def __init__(self, code: str, message: str, details: Any = None, op: Optional[str] = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details
        self.op = op
