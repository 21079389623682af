"""Finding the daemon of a workspace from a path (proto/PROTOCOL.md §1
"Finding the daemon"; the same rule as proto/discovery.ts and
client/discover.ts).

Runtime directories, in order: $REWINDFS_RUNTIME_DIR alone when set; else
$XDG_RUNTIME_DIR/rewindfs (when set), /run/rewindfs, /tmp/rewindfs-<uid>.
key(W) = the first 32 hex digits of sha256(UTF-8 of W), W absolute without a
trailing '/'. From a path P: A = realpath(P); for A and each ancestor up to
'/', for each runtime directory R, the first R/key(A).json that exists and
names A as its workspace is the connection file; its "token" names the token.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any, Dict, List, Mapping, Optional

from .constants import CONNECTION_FILE, ROOT_RUNTIME_DIR, RUNTIME_DIR_ENV
from .errors import RewindError


def runtime_dirs(env: Optional[Mapping[str, str]] = None, uid: Optional[int] = None) -> List[str]:
    """The runtime directories a client looks in, in order (see the module docstring)."""
    env = os.environ if env is None else env
    uid = os.getuid() if uid is None else uid
    own = env.get(RUNTIME_DIR_ENV)
    if own:
        return [os.path.abspath(own)]
    out = []
    if env.get("XDG_RUNTIME_DIR"):
        out.append(os.path.join(os.path.abspath(env["XDG_RUNTIME_DIR"]), "rewindfs"))
    out += [ROOT_RUNTIME_DIR, f"/tmp/rewindfs-{uid}"]
    return out


def _trim(p: str) -> str:
    t = p.rstrip("/")
    return t or "/"


def discovery_key(workspace: str) -> str:
    """32 lowercase hex digits of sha256 of the absolute workspace path (trailing '/' removed)."""
    return hashlib.sha256(_trim(workspace).encode("utf-8")).hexdigest()[:32]


def _ancestors(p: str) -> List[str]:
    out = []
    cur = _trim(p)
    while True:
        out.append(cur)
        if cur == "/":
            return out
        cur = os.path.dirname(cur) or "/"


def _trusted_dir(d: str, uid: int) -> bool:
    try:
        st = os.lstat(d)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid in (uid, 0) and not (st.st_mode & 0o022)


def discover(path: str, env: Optional[Mapping[str, str]] = None) -> Optional[Dict[str, Any]]:
    """The connection file of the daemon serving the workspace containing `path`
    (a dict: port, socket, pid, workspace, store, token, file), or None when
    there is none. Raises RewindError E_DISCOVERY when a connection file exists
    but is refused (not owned by this user or root), unreadable or malformed.
    """
    start = os.path.realpath(os.path.abspath(path))
    me = os.getuid()
    dirs = runtime_dirs(env, me)
    for a in _ancestors(start):
        name = discovery_key(a) + ".json"
        for r in dirs:
            f = os.path.join(r, name)
            try:
                st = os.lstat(f)
            except FileNotFoundError:
                continue
            except NotADirectoryError:
                continue
            except OSError as e:
                raise RewindError("E_DISCOVERY", f"cannot read the connection file {f} of {a}: {e}")
            if not stat.S_ISREG(st.st_mode):
                raise RewindError("E_DISCOVERY", f"connection file {f} of {a} is not a regular file; refusing it (remove it, or set {RUNTIME_DIR_ENV})")
            if st.st_uid not in (me, 0) and not _trusted_dir(r, me):
                raise RewindError("E_DISCOVERY", f"connection file {f} of {a} is owned by uid {st.st_uid}, neither this user (uid {me}) nor root; refusing it")
            try:
                with open(f, encoding="utf-8") as fh:
                    info = json.load(fh)
            except OSError as e:
                raise RewindError("E_DISCOVERY", f"cannot read the connection file {f} of {a}: {e} (only the user who mounted the workspace may read it)")
            except ValueError:
                raise RewindError("E_DISCOVERY", f"connection file {f} of {a} is not JSON; mount the workspace again")
            if not isinstance(info, dict) or not isinstance(info.get("store"), str) or not isinstance(info.get("token"), str) \
                    or (info.get("port") is None and info.get("socket") is None) or not isinstance(info.get("workspace"), str):
                raise RewindError("E_DISCOVERY", f"connection file {f} of {a} is malformed; mount the workspace again")
            if info["workspace"] != a:
                continue
            info["file"] = f
            return info
    return None


def read_token(path: str) -> str:
    """The token in file `path`; refuses a file that group or others can access (E_CONNECTION)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise RewindError("E_CONNECTION", f"cannot read token file {path}: {e}")
    if st.st_mode & 0o077:
        raise RewindError("E_CONNECTION", f"token file {path} has mode {stat.S_IMODE(st.st_mode):o}: group or others can access it; refusing it (chmod 600 {path})")
    with open(path, encoding="ascii") as f:
        return f.read().strip()


def read_connection_file(store_dir: str) -> Dict[str, Any]:
    """`<store_dir>/daemon.json` (CONNECTION_FILE) as a dict {port, socket, pid, workspace} (E_CONNECTION when unreadable)."""
    path = os.path.join(store_dir, CONNECTION_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError) as e:
        raise RewindError("E_CONNECTION", f"cannot read connection file {path}: {e} (is the daemon running?)")
    if not isinstance(info, dict) or (info.get("port") is None and info.get("socket") is None):
        raise RewindError("E_CONNECTION", f"connection file {path} is malformed")
    return info
