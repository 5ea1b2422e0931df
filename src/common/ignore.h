// Dropping a Status or Result on purpose (docs/design/conventions.md "Errors").
//
// Why: a bare `(void)` cast on a call hides whether anyone considered its
// failure; tests/source/check_void.sh refuses one. Instead, at the call site:
//  - ignoreError(x, why): every failure of x is harmless here; `why` says
//    why, for the reader (nothing is logged).
//  - MORPHEUS_IGNORE_NOT_FOUND(x, why): x may fail with NOT_FOUND because the
//    entity is already gone (`why` says how that happens); any other failure
//    is a bug and aborts with the call site, the reason and the status
//    (MORPHEUS_CHECK's contract: a broken invariant stops loudly).
// Both take a Status or any Result<T>. Header-only, no allocation on success.
#pragma once

#include <string>

#include "common/status.h"

namespace morpheus {

namespace ignore_detail {
inline Status statusOf(const Status& s) { return s; }
template <typename T>
Status statusOf(const Result<T>& r) {
  return r.isOk() ? Status::ok() : r.status();
}
}  // namespace ignore_detail

// x is evaluated by the caller (it is the call); only its outcome is dropped.
template <typename S>
inline void ignoreError(const S& /*status_or_result*/, const char* /*why*/) {}

#define MORPHEUS_IGNORE_NOT_FOUND(expr, why)                                                \
  do {                                                                                      \
    const ::morpheus::Status morpheus_ignored_ = ::morpheus::ignore_detail::statusOf(expr); \
    if (!morpheus_ignored_.isOk() &&                                                        \
        morpheus_ignored_.code() != ::morpheus::StatusCode::kNotFound)                      \
      ::morpheus::checkFailed(__FILE__, __LINE__, #expr,                                    \
                              std::string(why) + ": " + morpheus_ignored_.toString());      \
  } while (0)

}  // namespace morpheus
