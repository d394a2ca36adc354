// Status and StatusOr<T>: errors are values in kiln.
//
// A library function that can fail returns Status (no value) or StatusOr<T>. Nothing in a kiln
// library throws or aborts on bad input, a failing vendor call or a failing autotuning candidate;
// invariants that only a kiln bug can break may still assert.
//
// One pair of propagation macros:
//   KILN_RETURN_IF_ERROR(expr);            // expr yields Status or StatusOr<T>
//   KILN_ASSIGN_OR_RETURN(lhs, expr);      // lhs = value of StatusOr<T> expr, or return its error
//
// Messages say what went wrong, where (file:line:col for HLO text) and, where it helps, what to
// do. Construct them with the helpers below: InvalidArgument("expected ", x, ", found ", y).
#pragma once

#include <cassert>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kiln {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  // Returns a copy with `prefix` prepended to the message ("while doing X: <message>").
  Status WithContext(std::string_view prefix) const;

  static Status Ok() { return Status(); }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }

namespace internal {
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace internal

template <typename... Args>
Status InvalidArgument(const Args&... args) {
  return Status(StatusCode::kInvalidArgument, internal::StrCat(args...));
}
template <typename... Args>
Status NotFound(const Args&... args) {
  return Status(StatusCode::kNotFound, internal::StrCat(args...));
}
template <typename... Args>
Status Unimplemented(const Args&... args) {
  return Status(StatusCode::kUnimplemented, internal::StrCat(args...));
}
template <typename... Args>
Status Internal(const Args&... args) {
  return Status(StatusCode::kInternal, internal::StrCat(args...));
}
template <typename... Args>
Status FailedPrecondition(const Args&... args) {
  return Status(StatusCode::kFailedPrecondition, internal::StrCat(args...));
}
template <typename... Args>
Status ResourceExhausted(const Args&... args) {
  return Status(StatusCode::kResourceExhausted, internal::StrCat(args...));
}
template <typename... Args>
Status OutOfRange(const Args&... args) {
  return Status(StatusCode::kOutOfRange, internal::StrCat(args...));
}
template <typename... Args>
Status Unavailable(const Args&... args) {
  return Status(StatusCode::kUnavailable, internal::StrCat(args...));
}
template <typename... Args>
Status DataLoss(const Args&... args) {
  return Status(StatusCode::kDataLoss, internal::StrCat(args...));
}
template <typename... Args>
Status AlreadyExists(const Args&... args) {
  return Status(StatusCode::kAlreadyExists, internal::StrCat(args...));
}
template <typename... Args>
Status DeadlineExceeded(const Args&... args) {
  return Status(StatusCode::kDeadlineExceeded, internal::StrCat(args...));
}

// StatusOr<T>: either a T or a non-OK Status. Accessing the value of an error is a kiln bug
// (asserts in debug builds).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : status_(status) {  // NOLINT: implicit by design
    assert(!status.ok() && "StatusOr constructed from an OK status without a value");
    if (status_.ok()) status_ = Internal("StatusOr constructed from OK status without a value");
  }
  StatusOr(Status&& status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "StatusOr constructed from an OK status without a value");
    if (status_.ok()) status_ = Internal("StatusOr constructed from OK status without a value");
  }
  StatusOr(const T& value) : value_(value) {}  // NOLINT
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, StatusOr<T>> &&
                                        !std::is_same_v<std::decay_t<U>, T>>>
  StatusOr(U&& value) : value_(T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const& {
    static const Status kOk;
    return ok() ? kOk : status_;
  }
  Status status() && { return ok() ? Status() : std::move(status_); }

  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T& value() & {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

namespace internal {
inline Status AsStatus(const Status& s) { return s; }
inline Status AsStatus(Status&& s) { return std::move(s); }
template <typename T>
Status AsStatus(const StatusOr<T>& s) {
  return s.status();
}
template <typename T>
Status AsStatus(StatusOr<T>&& s) {
  return std::move(s).status();
}
}  // namespace internal

}  // namespace kiln

#define KILN_STATUS_CONCAT_INNER(a, b) a##b
#define KILN_STATUS_CONCAT(a, b) KILN_STATUS_CONCAT_INNER(a, b)

#define KILN_RETURN_IF_ERROR(expr)                                          \
  do {                                                                      \
    ::kiln::Status kiln_status_ = ::kiln::internal::AsStatus((expr));       \
    if (!kiln_status_.ok()) return kiln_status_;                            \
  } while (0)

#define KILN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()

#define KILN_ASSIGN_OR_RETURN(lhs, expr) \
  KILN_ASSIGN_OR_RETURN_IMPL(KILN_STATUS_CONCAT(kiln_statusor_, __LINE__), lhs, expr)
