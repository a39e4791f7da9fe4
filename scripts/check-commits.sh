#!/usr/bin/env bash
# Checks that the subject (first line) of each commit in a range is at most 72 characters, the
# detail going in the body (CONTRIBUTING.md). Usage:
#   scripts/check-commits.sh              # the commits not on the base: origin/main, else main
#   scripts/check-commits.sh A..B         # any range git log takes (e.g. main..HEAD, HEAD~3..)
# Prints each subject that is too long with its length, and exits 1 if there is one.
set -euo pipefail
export LC_ALL=C.UTF-8 # count characters, not bytes

MAX=72
if [ $# -gt 1 ]; then
  echo "usage: $0 [<revision range>]" >&2
  exit 2
fi
if [ $# -eq 1 ]; then
  range=$1
elif git rev-parse --verify --quiet origin/main >/dev/null; then
  range=origin/main..HEAD
else
  range=main..HEAD
fi

checked=0
long=0
# one commit per line: hash, a tab, the subject (%s is the first line of the message)
while IFS=$'\t' read -r hash subject; do
  checked=$((checked + 1))
  length=${#subject}
  if [ "$length" -gt "$MAX" ]; then
    long=$((long + 1))
    echo "$hash: subject of $length characters (at most $MAX): $subject"
  fi
done < <(git log --no-merges --format='%h%x09%s' "$range")

echo "$checked commit(s) in $range, $long with a subject over $MAX characters"
[ "$long" -eq 0 ]
