#!/usr/bin/env bash
# ctest SourceCommentsTest: source comments say what a thing is and why and
# cite the paper or docs/design; they carry no issue numbers and point nowhere
# outside the repository. Fails naming FILE:LINE for every line under src/,
# tests/, bench/, proto/, deploy/, examples/, .ci/ or a CMakeLists.txt at the
# top that holds
#   - an issue reference: "issue #N" / "issues #N", or a comment line that
#     starts with "#N" (the number of an "(issue" wrapped onto the next line);
#   - a pointer outside the repository: "../shared", DESIGN.md, CONVENTIONS.md
#     (the design lives in docs/design/, the conventions in
#     docs/design/conventions.md).
# Before scanning, the check runs itself on a planted file and fails unless it
# finds it, so it cannot pass by finding nothing.
#
# usage: check_comments.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: check_comments.sh SOURCE_DIR}
self=tests/source/check_comments.sh

# The patterns, written so that this file does not match them itself.
patterns=(
  -e '[Ii]ssues? #[0-9]'
  -e '^[[:space:]]*(//|#)[[:space:]]*#[0-9]+[,):;]'
  -e '[.][.]/shared'
  -e 'DESIGN[.]md'
  -e 'CONVENTIONS[.]md'
)

# scan DIR: prints DIR-relative FILE:LINE:TEXT of every offending line.
scan() {
  local root=$1 dirs=() d
  for d in src tests bench proto deploy examples .ci; do
    [[ -d $root/$d ]] && dirs+=("$d")
  done
  [[ -f $root/CMakeLists.txt ]] && dirs+=(CMakeLists.txt)
  (( ${#dirs[@]} )) || return 0
  (cd "$root" && grep -rnIE "${patterns[@]}" -- "${dirs[@]}" || true) |
    while IFS= read -r hit; do
      [[ ${hit%%:*} == "$self" ]] || printf '%s\n' "$hit"
    done
}

# Self-check on planted files: each kind of reference must be found.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/bench"
{
  echo '// The planner (issue #''2): LowCost.'
  echo '// wrapped (issue'
  echo '// #''15): a second line.'
  echo '// see ../''shared/DESIGN''.md'
  echo '# CONVENTIONS''.md "Errors"'
} >"$tmp/src/planted.h"
echo 'std::string t = "../''shared/data/swim-fb2009-24h.tsv";' >"$tmp/bench/planted.cc"
want=5
got=$(scan "$tmp" | wc -l)
if (( got != want )); then
  echo "SourceCommentsTest self-check: found $got of $want planted references:" >&2
  scan "$tmp" >&2
  exit 1
fi

hits=$(scan "$src")
if [[ -n $hits ]]; then
  echo "Issue references or pointers outside the repository in source files" >&2
  echo "(say what and why, cite the paper or docs/design/ instead):" >&2
  printf '%s\n' "$hits" >&2
  exit 1
fi
echo "SourceCommentsTest: no issue references or outside pointers"
