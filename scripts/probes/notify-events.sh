#!/usr/bin/env bash
# Which inotify and fanotify events each FUSE notification
# produces on this kernel, for files that change, appear, disappear or change
# type (issue 17). Needs root, gcc, libfuse3-dev, inotify-tools and fatrace
# (apt-get install -y inotify-tools), python3 (fanotify-watch.py beside it).
# Prints one line a scenario:
#   scenario | inotify events (watch:name:events) | fanotify events | what a reader sees after
# The table in DECISIONS.md ("What a watcher sees of FUSE notifications") is its output.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'fusermount3 -uz "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT
gcc -O2 -o "$work/probe" "$here/notify-events.c" $(pkg-config --cflags --libs fuse3) -lpthread
mkdir "$work/mnt"
M=$work/mnt

# scenario NAME "model commands" "notify commands" "reader command"
scenario () {
  local name=$1 model=$2 notify=$3 reader=$4
  coproc P { exec "$work/probe" "$M"; }
  local pin=${P[1]} pout=${P[0]} line
  read -r line <&"$pout"   # ready
  # warm the kernel's caches: entries, attributes, pages
  ls -la "$M" "$M/d" >/dev/null; cat "$M/a" "$M/b" "$M/d/c" "$M/t" >/dev/null; stat "$M/n" >/dev/null 2>&1 || true
  inotifywait -m --format '%w|%f|%e' "$M" "$M/d" "$M/a" "$M/t" "$M/d/c" >"$work/ino" 2>"$work/ino.err" &
  local iw=$!
  python3 "$here/fanotify-watch.py" "$M" 30 >"$work/fan" &
  local fa=$!
  # both watchers ready before anything happens
  until grep -q 'Watches established' "$work/ino.err" 2>/dev/null && grep -q '^#' "$work/fan" 2>/dev/null; do sleep 0.05; done
  local rcs=""
  while IFS= read -r c; do [ -n "$c" ] || continue; echo "$c" >&"$pin"; read -r line <&"$pout"; rcs+="${line#ok } "; done <<<"$(printf '%s\n' "$model" | tr ';' '\n'; printf '%s\n' "$notify" | tr ';' '\n')"
  sleep 0.4
  local seen
  seen=$(cd "$work" && eval "$reader" 2>&1 | tr '\n' ' ' || true)
  sleep 0.3
  kill "$iw" "$fa" 2>/dev/null; wait "$iw" "$fa" 2>/dev/null || true
  local ino fan
  ino=$(sed "s|$M/\{0,1\}|/|; s|//|/|" "$work/ino" | tr '\n' ' ')
  fan=$(grep -v '^#' "$work/fan" | sed "s|$M/\{0,1\}|/|; s| pid=.*||" | tr '\n' ';' || true)
  fanmode=$(grep '^#' "$work/fan" | tail -1)
  printf '%s | rc %s| inotify: %s| fanotify (%s): %s| reader: %s\n' "$name" "$rcs" "${ino:-none }" "${fanmode#\# }" "${fan:-none}" "$seen"
  echo quit >&"$pin"; wait "$P_PID" 2>/dev/null || true
  fusermount3 -uz "$M" 2>/dev/null || true
  rm -f "$work/ino" "$work/ino.err" "$work/fan"
}

R_A='cat mnt/a'
all=(
  'content changed, inval_inode|set a NEWA|ii 2|'"$R_A"
  'content changed, notify_store|set a NEWA|store 2 NEWA|'"$R_A"
  'content changed, inval_entry|set a NEWA|ie 1 a|'"$R_A"
  'content changed, inval_entry + inode|set a NEWA|ie 1 a;ii 2|'"$R_A"
  'file disappears, inval_entry|hide a|ie 1 a|ls mnt'
  'file disappears, notify_delete|hide a|del 1 2 a|ls mnt'
  'file appears, inval_entry|unhide n|ie 1 n|ls mnt'
  'file appears, inval_inode of parent|unhide n|ii 1|ls mnt'
  'file becomes dir, inval_entry|retype|ie 1 t|stat -c %F mnt/t'
  'file becomes dir, notify_delete|retype|del 1 7 t|stat -c %F mnt/t'
  'dir with a file disappears, delete child then dir|hide d|del 4 5 c;del 1 4 d|ls mnt'
  'dir with a file disappears, delete dir only|hide d|del 1 4 d|ls mnt'
  'nothing changed, helper opens a for writing and closes|||sh -c ": >>mnt/a"; cat mnt/a'
  'nothing changed, helper sets the mode a already has|||chmod 644 mnt/a; stat -c %a mnt/a'
)
# one scenario by number (1-based) as the argument; without one, each in a
# process of its own (a mount of its own: one after another on the same
# mount point, a lazily detached predecessor made later notifications fail)
if [ $# -eq 0 ]; then
  for i in "${!all[@]}"; do bash "$0" $((i + 1)); done
  exit 0
fi
for i in "${!all[@]}"; do
  [ "$1" != $((i + 1)) ] && continue
  IFS='|' read -r n m c r <<<"${all[$i]}"
  scenario "$n" "$m" "$c" "$r"
done
