#!/usr/bin/env bash
# Runs every test (tap over the compiled tests in dist/test), bounded in
# time, then clears anything a crashed test could have left: mounts and
# daemons under this run's own temporary directory (TMPDIR is set to it, so
# runs side by side never touch each other's mounts).
set -uo pipefail
cd "$(dirname "$0")/.."
limit=${REWINDFS_TEST_LIMIT:-3600}
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/rewindfs-run-XXXXXX")
chmod 755 "$run_tmp"   # tests run commands as an unprivileged user inside it
export TMPDIR=$run_tmp
files=("$@")
[ "${#files[@]}" -gt 0 ] || files=(dist/test/*.test.js)
# if the suite hangs on a wedged mount, abort the FUSE connections of this
# run's mounts (fusectl, by device minor) so that `timeout` can end the
# processes stuck in the kernel
( sleep "$limit"; grep -q fusectl /proc/mounts || mount -t fusectl none /sys/fs/fuse/connections
  awk -v d="$run_tmp/" '{for (i = 7; i <= NF; i++) if ($i == "-") break} $(i+1) ~ /^fuse/ && index($5, d) == 1 {split($3, a, ":"); print a[2]}' /proc/self/mountinfo |
    while read -r minor; do echo 1 > "/sys/fs/fuse/connections/$minor/abort"; done ) </dev/null >/dev/null 2>&1 &
watchdog=$!
# one test file at a time: several tests drop the kernel's caches (drop_caches is machine-wide) and
# count what the kernel forgets; a second file running beside them breaks those counts (tried
# 2026-12-04 with --jobs=2: the forget-accounting tests of fuse-ll and fuse-ll-daemon failed)
timeout --kill-after=20 "$limit" node_modules/.bin/tap --jobs=1 --timeout=${REWINDFS_TAP_TIMEOUT:-300} --disable-coverage --allow-empty-coverage "${files[@]}" | tee "$run_tmp/tap.out"
rc=${PIPESTATUS[0]}
# the plain closing line CI reads: "N passed, N failed" from tap's own summary
summary=$(grep -E '^# \{ total: [0-9]+' "$run_tmp/tap.out" | tail -1)
if [ -n "$summary" ]; then
  total=$(sed -E 's/.*total: ([0-9]+).*/\1/' <<<"$summary")
  pass=$(sed -nE 's/.*pass: ([0-9]+).*/\1/p' <<<"$summary"); pass=${pass:-0}
  todo=$(sed -nE 's/.*todo: ([0-9]+).*/\1/p' <<<"$summary"); todo=${todo:-0}
  skip=$(sed -nE 's/.*skip: ([0-9]+).*/\1/p' <<<"$summary"); skip=${skip:-0}
  echo "tests: $pass passed, $((total - pass - todo - skip)) failed, $((todo + skip)) skipped"
fi
pkill -P "$watchdog" 2>/dev/null; kill "$watchdog" 2>/dev/null
[ $rc -eq 124 ] && echo "test.sh: the suite exceeded ${limit} s and was stopped" >&2
# leftovers: a passing suite leaves none; report and clear them
left=$(awk -v d="$run_tmp/" '$3 ~ /^fuse/ && index($2, d) == 1 {print $2}' /proc/mounts)
for m in $left; do echo "test.sh: clearing leftover mount $m" >&2; fusermount -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
pkill -9 -f "$run_tmp/" 2>/dev/null || true
rm -rf "$run_tmp" 2>/dev/null
exit $rc
