#!/usr/bin/env bash
# An independent manifest of a directory tree, made with ordinary tools
# (GNU find, sha256sum) and not with rewindfs's own view: one line per path
# (the root included, .git included, empty directories included), sorted:
#   <path> <type> <mode octal> <uid> <gid> <nlink> <size> <mtime s.ns> <sha256 | link target | ->
# Directory sizes are left out (they are filesystem-specific); atime is left
# out (reading changes it on other filesystems). Regular files are hashed in
# batches (one sha256sum per xargs batch), not one
# process per file.
# Usage: manifest.sh DIR   (prints to stdout)
set -euo pipefail
dir=${1:?usage: manifest.sh DIR}
cd "$dir"
declare -A sum=()
# sha256sum -z: NUL-terminated "HASH  PATH" records, names not escaped
while IFS= read -r -d '' rec; do
  sum["${rec:66}"]=${rec:0:64}
done < <(find . -type f -print0 | xargs -0 -r sha256sum -z --)
find . -printf '%p\0%y\0%m\0%U\0%G\0%n\0%s\0%T@\0%l\0' |
  while IFS= read -r -d '' p && IFS= read -r -d '' y && IFS= read -r -d '' m && IFS= read -r -d '' u &&
        IFS= read -r -d '' g && IFS= read -r -d '' n && IFS= read -r -d '' s && IFS= read -r -d '' t &&
        IFS= read -r -d '' l; do
    case "$y" in
      f) h=${sum["$p"]:-}
         [ -n "$h" ] || { h=$(sha256sum < "$p"); h=${h%% *}; } ;;
      l) h="-> $l" ;;
      d) h="-"; s="-" ;;
      *) h="-" ;;
    esac
    printf '%s %s %s %s %s %s %s %s %s\n' "$p" "$y" "$m" "$u" "$g" "$n" "$s" "$t" "$h"
  done | LC_ALL=C sort
