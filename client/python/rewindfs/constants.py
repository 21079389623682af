"""Protocol facts, generated from proto/ (and the backtrack tools' limits from client/) by scripts/generate.ts: do not edit (npm run generate)."""

#: the protocol version this client speaks (proto/version.ts)
PROTOCOL_VERSION = 1
#: the connection file in a store directory (proto/messages.ts)
CONNECTION_FILE = "daemon.json"
#: the token file in a store directory, mode 0600 (proto/messages.ts)
TOKEN_FILE = "token"
#: the environment variable naming the one runtime directory (proto/discovery.ts)
RUNTIME_DIR_ENV = "REWINDFS_RUNTIME_DIR"
#: the runtime directory of a daemon running as root (proto/discovery.ts)
ROOT_RUNTIME_DIR = "/run/rewindfs"
#: the most checkpoints `candidates` returns (proto/validate.ts)
MAX_CANDIDATES = 80
#: the most bytes one `read` returns (proto/validate.ts)
MAX_READ_LENGTH = 16777216
#: the most files backtrack_candidates lists per candidate with `files` (client/tools.ts)
MAX_CANDIDATE_FILES = 30
#: the default longest run of one backtrack_localise probe, seconds (client/localise.ts)
DEFAULT_PROBE_TIMEOUT = 120
