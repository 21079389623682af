#!/usr/bin/env bash
# The long forms of the tests that guard against losing a byte (issue 4), in
# one command, for a time budget:
#   npm run test:long            # about 60 minutes
#   npm run test:long -- 180     # about 3 hours
# What runs (each prints its own figures as tap comments, collected at the end):
#   - differential fuzzing (test/fuzz/fuzz.test.ts): new seeds for ~40% of the budget
#   - crash safety (test/crash/crash.test.ts): kill -9 rounds for ~30% of the budget
#   - the property test (test/fuzz/property.test.ts): 12 seeds x 300 ops
#   - real tools at large scale (test/tools/tools-*.test.ts, REWINDFS_TOOLS_SCALE=large)
#   - the conformance suite (test/posix/conformance.test.ts)
#   - the soak (test/tools/soak.test.ts): tools, a checkpoint a second, a restore
#     every 30 s; 30 minutes when the budget is 100 minutes or more, else 30%
#   - open files across restores (test/restore/open-files*.test.ts): 10,000
#     restores with a file held open, and a git status loop across 10,000
#     restores (about 20 minutes on 2 cores), when the budget is 100 minutes
#     or more, else 1,000 of each
# Set-up is the same as npm test's (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-${REWINDFS_LONG_MINUTES:-60}}
if ! [[ "$minutes" =~ ^[0-9]+$ ]] || [ "$minutes" -lt 10 ]; then
  echo "test-long: give the budget in whole minutes, at least 10 (got '$minutes')" >&2; exit 2
fi
bash scripts/setup.sh
budget=$((minutes * 60))
export REWINDFS_FUZZ_SECONDS=$((budget * 40 / 100))
# a crash round (mount, 4 kills with checks, write-back, verify) takes about 40 s on 2 cores
export REWINDFS_CRASH_ROUNDS=$(( (budget * 30 / 100) / 40 > 2 ? (budget * 30 / 100) / 40 : 2 ))
export REWINDFS_CRASH_SAMPLE=all
export REWINDFS_PROPERTY_SEEDS=1,2,3,4,5,6,7,8,9,10,11,12 REWINDFS_PROPERTY_OPS=300
export REWINDFS_TOOLS_SCALE=large
export REWINDFS_SOAK_SECONDS=$(( budget >= 6000 ? 1800 : budget * 30 / 100 ))
export REWINDFS_OPENFILES_RESTORES=$(( budget >= 6000 ? 10000 : 1000 ))
export REWINDFS_GIT_LOOP_RESTORES=$(( budget >= 6000 ? 10000 : 1000 ))
# one file at a time (test.sh runs two at once by default): the budget's shares above are wall time
export REWINDFS_TEST_JOBS=${REWINDFS_TEST_JOBS:-1}
# no per-file limit below the budget; the whole run is bounded at twice the budget
export REWINDFS_TAP_TIMEOUT=$((budget + 1800))
export REWINDFS_TEST_LIMIT=$((budget * 2 + 1800))
out=$(mktemp "${TMPDIR:-/tmp}/rewindfs-long-XXXXXX.log")
echo "test-long: ${minutes} min budget (fuzz ${REWINDFS_FUZZ_SECONDS} s, ${REWINDFS_CRASH_ROUNDS} crash rounds); log in $out" >&2
files=(dist/test/fuzz/fuzz.test.js dist/test/crash/crash.test.js dist/test/fuzz/property.test.js dist/test/posix/conformance.test.js dist/test/tools/soak.test.js dist/test/restore/open-files.test.js dist/test/restore/open-files-git.test.js)
for f in dist/test/tools/tools-*.test.js; do [ -e "$f" ] && files+=("$f"); done
set +e
bash scripts/test.sh "${files[@]}" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
set -e
echo
echo "test-long: figures"
grep -hE '^\s*# (conformance|fuzz|crash|property|tools|soak|open-files|git loop)\b' "$out" | sed -E 's/^\s*//' || true
exit "$rc"
