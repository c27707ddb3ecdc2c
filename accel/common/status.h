// Status and Result: the one error type at Tessera's module boundaries. Codes map one-to-one
// onto gRPC status codes (server/) and HTTP statuses.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tessera {

// The subset of gRPC's codes Tessera produces; values equal grpc::StatusCode's.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
};

// Name of a code as gRPC spells it ("INVALID_ARGUMENT").
const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status failed_precondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status deadline_exceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be ok

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tessera

// Returns early from a function returning Status or Result<T> when `expr` is not ok.
#define TESSERA_RETURN_IF_ERROR(expr)                     \
  do {                                                    \
    ::tessera::Status tessera_status_ = (expr);           \
    if (!tessera_status_.is_ok()) return tessera_status_; \
  } while (0)

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)
// `TESSERA_ASSIGN_OR_RETURN(auto x, make_x());` unwraps a Result or returns its Status. `lhs` is
// a declaration, so it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TESSERA_ASSIGN_OR_RETURN(lhs, expr)                                                                          \
  auto TESSERA_CONCAT(tessera_result_, __LINE__) = (expr);                                                           \
  if (!TESSERA_CONCAT(tessera_result_, __LINE__).is_ok()) return TESSERA_CONCAT(tessera_result_, __LINE__).status(); \
  lhs = std::move(TESSERA_CONCAT(tessera_result_, __LINE__)).value()
// NOLINTEND(bugprone-macro-parentheses)
