#!/usr/bin/env bash
# Runs every test (tap over the compiled tests in dist/test), bounded in
# time, then clears anything a crashed test could have left: mounts and
# processes of this run's own temporary directory (TMPDIR is set to it, so
# runs side by side never touch each other's mounts).
#
#   bash scripts/test.sh                      # every test file
#   bash scripts/test.sh dist/test/x/y.test.js         # these files only
#   bash scripts/test.sh dist/test/restore/*.test.js   # one folder (test/README.md)
#
# Test files run two at a time (REWINDFS_TEST_JOBS, default 2): on 2 cores
# most of a FUSE test's time is spent waiting on the daemon, the kernel or a
# child process, so two overlap well. A file that must run with no other test
# beside it says so with a line starting `// test.sh: alone` (for example: it
# drops the kernel's caches, which is machine-wide, and counts what the kernel
# forgets); those run one at a time after the others.
#
# Ctrl-C (SIGINT to the process group), SIGTERM or SIGHUP stop every test
# process (tap and its tests run in `timeout`'s own process group, so they
# would not get a terminal's Ctrl-C), unmount the run's mounts and remove its
# temporary directory; the exit status is then 128 + the signal's number.
set -uo pipefail
cd "$(dirname "$0")/.."
limit=${REWINDFS_TEST_LIMIT:-3600}
jobs=${REWINDFS_TEST_JOBS:-2}
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then echo "test.sh: REWINDFS_TEST_JOBS=$jobs: give a whole number of test files to run at once, 1 or more" >&2; exit 2; fi
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/rewindfs-run-XXXXXX")
chmod 755 "$run_tmp"   # tests run commands as an unprivileged user inside it
export TMPDIR=$run_tmp
files=("$@")
# every compiled test that still has its source (after `tsc -b` alone, an output of a test that moved or
# was removed is still there: scripts/setup.sh removes those)
[ "${#files[@]}" -gt 0 ] || mapfile -t files < <(find dist/test -name '*.test.js' -not -path '*/helpers/*' | LC_ALL=C sort |
  while read -r f; do r=${f#dist/test/}; [ -e "test/${r%.js}.ts" ] && echo "$f"; done)

# Mount points under the run's directory, deepest first (octal escapes of /proc/mounts kept: the
# tools below take them as written there only after unescaping, done by printf %b).
run_mounts () {
  awk -v d="$run_tmp/" 'index($2, d) == 1 {print length($2), $2}' /proc/mounts | sort -rn | cut -d' ' -f2- |
    while read -r m; do printf '%b\n' "$m"; done
}

# Aborts the FUSE connections of the run's mounts (fusectl, by device minor), so that processes
# stuck in a request to a wedged daemon can be ended.
abort_fuse () {
  grep -q fusectl /proc/mounts || mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
  awk -v d="$run_tmp/" '{for (i = 7; i <= NF; i++) if ($i == "-") break} $(i+1) ~ /^fuse/ && index($5, d) == 1 {split($3, a, ":"); print a[2]}' /proc/self/mountinfo |
    while read -r minor; do echo 1 > "/sys/fs/fuse/connections/$minor/abort"; done 2>/dev/null
}

# Every process of this run but this script: those whose environment has TMPDIR=<the run's
# directory> (tests, daemons and what they started, even in a process group or session of their
# own) or whose command line names the directory. Builtins only: a child of this script would carry
# the same TMPDIR.
run_pids () {
  local p pid e x
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] || [ "$pid" = "$tee_pid" ] && continue
    mapfile -d '' e 2>/dev/null < "$p/environ" || continue
    for x in "${e[@]}"; do [ "$x" = "TMPDIR=$run_tmp" ] && { echo "$pid"; continue 2; }; done
    mapfile -d '' e 2>/dev/null < "$p/cmdline" || continue
    case "${e[*]}" in *"$run_tmp/"*) echo "$pid" ;; esac
  done
}

# Clears what is left of the run (a passing suite leaves nothing): mounts, processes, the directory.
clear_leftovers () {
  local left m pid
  left=$(run_mounts)
  [ -n "$left" ] && abort_fuse
  for pid in $(run_pids); do kill -9 "$pid" 2>/dev/null; done
  while read -r m; do
    [ -n "$m" ] || continue
    echo "test.sh: clearing leftover mount $m" >&2
    fusermount3 -uz "$m" 2>/dev/null || fusermount -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done <<<"$left"
  rm -rf "$run_tmp" 2>/dev/null
}

tap_pid=''
tee_pid=''
watchdog=''
stop () {  # $1 signal name, $2 exit status
  trap '' INT TERM HUP
  echo "test.sh: SIG$1: stopping the tests, clearing their mounts and $run_tmp" >&2
  if [ -n "$tap_pid" ]; then
    # timeout passes SIGTERM on to tap and to everything in its process group (its own)
    kill -TERM "$tap_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$tap_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$tap_pid" 2>/dev/null
  fi
  [ -n "$watchdog" ] && { pkill -P "$watchdog" 2>/dev/null; kill "$watchdog" 2>/dev/null; }
  # tee shows what tap wrote last; it ends when the last writer is gone
  [ -n "$tee_pid" ] && for _ in $(seq 10); do kill -0 "$tee_pid" 2>/dev/null || break; sleep 0.2; done
  tee_pid=''
  clear_leftovers
  exit "$2"
}
trap 'stop INT 130' INT
trap 'stop TERM 143' TERM
trap 'stop HUP 129' HUP

# if the suite hangs on a wedged mount, abort the FUSE connections of this
# run's mounts so that `timeout` can end the processes stuck in the kernel
( sleep "$limit"; abort_fuse ) </dev/null >/dev/null 2>&1 &
watchdog=$!
deadline=$((SECONDS + limit))

alone=()
together=()
for f in "${files[@]}"; do
  if grep -q '^// test\.sh: alone' "$f" 2>/dev/null; then alone+=("$f"); else together+=("$f"); fi
done

# Runs tap over the files given with $1 files at a time, its output shown and kept in tap.out.
# tap runs in the background (so a signal's trap runs at once, not when tap ends) and under
# `timeout` (its own process group: on a timeout every test process is ended).
rc=0
run_tap () {
  local n=$1; shift
  local left_s=$((deadline - SECONDS)) r
  [ "$left_s" -gt 0 ] || { r=124; [ $rc -eq 0 ] && rc=$r; return; }
  rm -f "$run_tmp/out.fifo"; mkfifo "$run_tmp/out.fifo"
  tee -a "$run_tmp/tap.out" < "$run_tmp/out.fifo" &
  tee_pid=$!
  timeout --kill-after=20 "$left_s" node_modules/.bin/tap --jobs="$n" --timeout="${REWINDFS_TAP_TIMEOUT:-300}" --disable-coverage --allow-empty-coverage "$@" > "$run_tmp/out.fifo" &
  tap_pid=$!
  wait "$tap_pid"; r=$?
  tap_pid=''
  wait "$tee_pid"; tee_pid=''
  [ $rc -eq 0 ] && rc=$r
}
[ "${#together[@]}" -gt 0 ] && run_tap "$jobs" "${together[@]}"
# files that must run with no other test beside them (see the header)
[ "${#alone[@]}" -gt 0 ] && run_tap 1 "${alone[@]}"

# the plain closing line CI reads: "N passed, N failed" from tap's own summaries (one per tap run)
if grep -qE '^# \{ total: [0-9]+' "$run_tmp/tap.out" 2>/dev/null; then
  total=0; pass=0; todo=0; skip=0
  while read -r line; do
    n=$(sed -nE 's/.*total: ([0-9]+).*/\1/p' <<<"$line"); total=$((total + ${n:-0}))
    n=$(sed -nE 's/.*pass: ([0-9]+).*/\1/p' <<<"$line"); pass=$((pass + ${n:-0}))
    n=$(sed -nE 's/.*todo: ([0-9]+).*/\1/p' <<<"$line"); todo=$((todo + ${n:-0}))
    n=$(sed -nE 's/.*skip: ([0-9]+).*/\1/p' <<<"$line"); skip=$((skip + ${n:-0}))
  done < <(grep -E '^# \{ total: [0-9]+' "$run_tmp/tap.out")
  echo "tests: $pass passed, $((total - pass - todo - skip)) failed, $((todo + skip)) skipped"
fi
pkill -P "$watchdog" 2>/dev/null; kill "$watchdog" 2>/dev/null
[ $rc -eq 124 ] && echo "test.sh: the suite exceeded ${limit} s and was stopped" >&2
clear_leftovers
exit $rc
