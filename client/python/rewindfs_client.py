"""The earlier one-file client's name, kept for scripts that import it:
`RewindClient` is rewindfs.Client (the sync API, same methods), `RewindError`
is rewindfs.RewindError. New code: `import rewindfs` (README.md).

Command line: python3 rewindfs_client.py STORE_DIR OP [JSON_ARGS]
"""
import json
import sys

from rewindfs import Client as RewindClient, RewindError  # noqa: F401

__all__ = ["RewindClient", "RewindError"]

if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: rewindfs_client.py STORE_DIR OP [JSON_ARGS]\n"
                 "e.g.   rewindfs_client.py /var/lib/rewindfs/stores/x candidates '{\"limit\": 5}'")
    with RewindClient.from_store(sys.argv[1]) as client:
        try:
            result = client.call(sys.argv[2], **(json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}))
        except RewindError as err:
            sys.exit(str(err))
        print(json.dumps(result, indent=2, default=lambda b: b.hex()))
