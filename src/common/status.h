// One error model for all of Morpheus (docs/design/conventions.md "Errors").
//
// Expected failures are values: Status, or Result<T> holding either a T or a
// non-OK Status. The code set is closed; conversion to gRPC / HTTP codes
// happens only at the API edge (src/common/rpc.h, src/common/http_server.h).
// Invariant violations use MORPHEUS_CHECK, which aborts with context.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace morpheus {

enum class StatusCode {
  kOk,
  kInvalidArgument,   // malformed input; message names the field
  kNotFound,          // the named entity does not exist
  kInfeasible,        // well-formed but cannot be satisfied (gRPC FAILED_PRECONDITION)
  kAlreadyExists,     // an entity with that id exists
  kPermissionDenied,  // caller may not do this
  kUnavailable,       // transient: a peer or store is unreachable; retry may succeed
  kInternal,          // a bug or an unexpected environment failure
};

const char* statusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: deadline: must be after arrival"
  std::string toString() const;

  // Returns a copy whose message is "prefix: message" (adds context while propagating).
  Status withContext(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Helpers that keep the "name the field" rule easy to follow.
inline Status invalidArgument(const std::string& field, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, field + ": " + what);
}
inline Status notFound(const std::string& what) { return Status(StatusCode::kNotFound, what); }
inline Status infeasible(const std::string& what) { return Status(StatusCode::kInfeasible, what); }
inline Status alreadyExists(const std::string& what) {
  return Status(StatusCode::kAlreadyExists, what);
}
inline Status permissionDenied(const std::string& what) {
  return Status(StatusCode::kPermissionDenied, what);
}
inline Status unavailable(const std::string& what) {
  return Status(StatusCode::kUnavailable, what);
}
inline Status internalError(const std::string& what) { return Status(StatusCode::kInternal, what); }

// Either a value or a non-OK Status. Accessing value() of an error aborts.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).isOk()) {
      std::fprintf(stderr, "Result constructed from OK status without a value\n");
      std::abort();
    }
  }

  bool isOk() const { return std::holds_alternative<T>(v_); }
  Status status() const { return isOk() ? Status::ok() : std::get<Status>(v_); }

  T& value() & {
    checkOk();
    return std::get<T>(v_);
  }
  const T& value() const& {
    checkOk();
    return std::get<T>(v_);
  }
  T&& value() && {
    checkOk();
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void checkOk() const {
    if (!isOk()) {
      std::fprintf(stderr, "Result::value() on error: %s\n",
                   std::get<Status>(v_).toString().c_str());
      std::abort();
    }
  }
  std::variant<Status, T> v_;
};

[[noreturn]] void checkFailed(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace morpheus

// Invariant check: aborts with file, line, condition and message.
#define MORPHEUS_CHECK(cond, msg)                                           \
  do {                                                                      \
    if (!(cond)) ::morpheus::checkFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)

#define MORPHEUS_CONCAT_INNER(a, b) a##b
#define MORPHEUS_CONCAT(a, b) MORPHEUS_CONCAT_INNER(a, b)

#define MORPHEUS_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::morpheus::Status _st = (expr);   \
    if (!_st.isOk()) return _st;       \
  } while (0)

#define MORPHEUS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.isOk()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define MORPHEUS_ASSIGN_OR_RETURN(lhs, expr) \
  MORPHEUS_ASSIGN_OR_RETURN_IMPL(MORPHEUS_CONCAT(_result_, __LINE__), lhs, expr)
