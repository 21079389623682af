#!/usr/bin/env bash
# An independent manifest of a directory tree, made with ordinary tools
# (GNU find, sha256sum) and not with rewindfs's own view: one line per path
# (the root included, .git included, empty directories included), sorted:
#   <path> <type> <mode octal> <uid> <gid> <nlink> <size> <mtime s.ns> <sha256 | link target | ->
# Directory sizes are left out (they are filesystem-specific); atime is left
# out (reading changes it on other filesystems).
# Files are hashed by one sha256sum run over all of them (in find's order),
# not one process per file.
# Usage: manifest.sh DIR   (prints to stdout)
set -euo pipefail
dir=${1:?usage: manifest.sh DIR}
cd "$dir"
hashes_file=$(mktemp)
trap 'rm -f "$hashes_file"' EXIT
recs=()
files=()
while IFS= read -r -d '' p && IFS= read -r -d '' y && IFS= read -r -d '' m && IFS= read -r -d '' u &&
      IFS= read -r -d '' g && IFS= read -r -d '' n && IFS= read -r -d '' s && IFS= read -r -d '' t &&
      IFS= read -r -d '' l; do
  recs+=("$p" "$y" "$m" "$u" "$g" "$n" "$s" "$t" "$l")
  [ "$y" = f ] && files+=("$p")
done < <(find . -printf '%p\0%y\0%m\0%U\0%G\0%n\0%s\0%T@\0%l\0')
hashes=()
if [ "${#files[@]}" -gt 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 sha256sum -- > "$hashes_file"
  # one line per file; a name sha256sum must escape gets a leading backslash (kept, as before)
  mapfile -t hashes < <(cut -d' ' -f1 "$hashes_file")
fi
if [ "${#hashes[@]}" -ne "${#files[@]}" ]; then
  echo "manifest.sh: ${#files[@]} files but ${#hashes[@]} hashes" >&2
  exit 1
fi
k=0
for ((i = 0; i < ${#recs[@]}; i += 9)); do
  p=${recs[i]} y=${recs[i+1]} m=${recs[i+2]} u=${recs[i+3]} g=${recs[i+4]} n=${recs[i+5]} s=${recs[i+6]} t=${recs[i+7]} l=${recs[i+8]}
  case "$y" in
    f) h=${hashes[k]}; k=$((k + 1)) ;;
    l) h="-> $l" ;;
    d) h="-"; s="-" ;;
    *) h="-" ;;
  esac
  printf '%s %s %s %s %s %s %s %s %s\n' "$p" "$y" "$m" "$u" "$g" "$n" "$s" "$t" "$h"
done | LC_ALL=C sort
