#!/usr/bin/env bash
# Installs what rewindfs needs and builds it; safe to run again (each step
# is skipped when already done). Used by `npm run demo` and `npm test`.
#   - Debian packages: libfuse2 + fuse3 (runtime; fuse3 replaces the fuse
#     package and keeps a fusermount link), libfuse-dev + libfuse3-dev + pkg-config
#     (building the patched binding), git + sqlite3 + python3-websockets
#     (the main job and the tests), make + gcc (the tools tests build C),
#     nettle-dev (SHA-256 for the harness hook client's discovery),
#     btrfs-progs + rsync (peers of the benchmarks in bench/)
#   - npm dependencies (npm install when node_modules is missing or older
#     than package.json)
#   - the TypeScript build (dist/, tsc -b over the folders' projects), the
#     harness hook client (dist/hooks/rewindfs-hook, gcc) and the native binding (fuse/native/build)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then say "Node.js 20 or newer is needed (found $(node --version 2>/dev/null || echo none))"; exit 1; fi

pkgs=(libfuse2 fuse3 libfuse-dev libfuse3-dev pkg-config git sqlite3 python3-websockets python3-msgpack python3-venv python3-setuptools python3-wheel rsync make gcc nettle-dev btrfs-progs)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else say "need root to install: ${missing[*]} (apt-get install -y ${missing[*]})"; exit 1; fi
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ! -e /dev/fuse ]; then say "/dev/fuse is missing: this machine cannot mount FUSE filesystems (modprobe fuse)"; exit 1; fi

if [ ! -d node_modules ] || [ package.json -nt node_modules ] || [ ! -x node_modules/.bin/tsc ]; then
  say "installing npm dependencies"
  npm install --no-audit --no-fund --loglevel=error >/dev/null
  touch node_modules
fi

say "building"
# one project per folder (tsc -b): a wrong-way import or a cycle fails the build (README "Layout")
node_modules/.bin/tsc -b
# tsc -b never deletes an output: a compiled test whose source moved or was removed would still be
# found and run by test.sh (twice, when it moved), so outputs under dist/test without a source go
if [ -d dist/test ]; then
  find dist/test -name '*.js' | while read -r js; do
    rel=${js#dist/test/}
    [ -e "test/${rel%.js}.ts" ] || rm -f "$js" "${js%.js}.d.ts" "$js.map"
  done
  find dist/test -mindepth 1 -type d -empty -delete
fi
# the harness hook client: C, because it runs before every tool call (Node's start-up alone is ~60 ms)
if [ ! -x dist/hooks/rewindfs-hook ] || [ hooks/rewindfs-hook.c -nt dist/hooks/rewindfs-hook ] || [ hooks/json-reader.h -nt dist/hooks/rewindfs-hook ]; then
  mkdir -p dist/hooks
  # static: no dynamic loader at each start (about a quarter of its start-up under load); dynamic where libc.a is missing
  gcc -O2 -Wall -Wextra -static -o dist/hooks/rewindfs-hook hooks/rewindfs-hook.c -lnettle 2>/dev/null \
    || gcc -O2 -Wall -Wextra -o dist/hooks/rewindfs-hook hooks/rewindfs-hook.c -lnettle
fi
# the helper that repeats a restore through the mount so watchers hear of it (daemon/announce.ts): C, started once per restore
if [ ! -x dist/daemon/rewindfs-announce ] || [ daemon/rewindfs-announce.c -nt dist/daemon/rewindfs-announce ]; then
  mkdir -p dist/daemon
  gcc -O2 -Wall -Wextra -o dist/daemon/rewindfs-announce daemon/rewindfs-announce.c
fi
# node-gyp is chatty: keep its output, show it only when the build fails
native_log=$(mktemp)
if ! node scripts/build-native.mjs >"$native_log" 2>&1; then cat "$native_log" >&2; rm -f "$native_log"; say "building the FUSE binding failed (output above)"; exit 1; fi
rm -f "$native_log"
