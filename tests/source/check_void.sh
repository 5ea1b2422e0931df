#!/usr/bin/env bash
# ctest VoidCastTest: no Status or Result is dropped by a bare `(void)` cast on
# a call in src/ (nor by `static_cast<void>(call)` or `std::ignore = call`;
# docs/design/conventions.md "Errors"). A harmless failure is
# dropped through ignoreError(x, "why"), an expected NOT_FOUND through
# MORPHEUS_IGNORE_NOT_FOUND(x, "why") (src/common/ignore.h), so every dropped
# outcome names its reason. `(void)name;` on a variable or parameter (an unused
# value, not a call) stays allowed. Fails naming FILE:LINE of every offending
# line; runs itself on a planted file first so it cannot pass by finding
# nothing.
#
# usage: check_void.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: check_void.sh SOURCE_DIR}

# A (void) cast followed by an expression that calls something: an identifier
# path (a, a.b, a->b, a::b) and an opening parenthesis. The same drop spelt
# `static_cast<void>(call(...))` or `std::ignore = call(...)` is refused too.
call='[A-Za-z_][A-Za-z0-9_:.>-]*[[:space:]]*(<[^;]*>)?[[:space:]]*\('
pattern="\\(void\\)[[:space:]]*$call|static_cast<void>[[:space:]]*\\([[:space:]]*$call|std::ignore[[:space:]]*=[[:space:]]*$call"

scan() {
  (cd "$1" && grep -rnE --include='*.cc' --include='*.h' "$pattern" src || true)
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
{
  echo '  (void)sched_->removeApp(app);'
  echo '  (void)persist(e);'
  echo '  (void)google::protobuf::util::MessageToJsonString(m, &t, o);'
  echo '  static_cast<void>(store_->commit(batch));'
  echo '  std::ignore = runtime->setQueueMaxResources(old);'
  echo '  (void)unused_parameter;'
  echo '  static_cast<void>(unused_parameter);'
} >"$tmp/src/planted.cc"
got=$(scan "$tmp" | wc -l)
if (( got != 5 )); then
  echo "VoidCastTest self-check: found $got of 5 planted casts:" >&2
  scan "$tmp" >&2
  exit 1
fi

hits=$(scan "$src")
if [[ -n $hits ]]; then
  echo "Bare (void) casts on calls in src/ (use ignoreError(x, \"why\") or" >&2
  echo "MORPHEUS_IGNORE_NOT_FOUND(x, \"why\") from common/ignore.h):" >&2
  printf '%s\n' "$hits" >&2
  exit 1
fi
echo "VoidCastTest: no bare (void) casts on calls"
