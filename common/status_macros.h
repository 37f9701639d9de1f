#ifndef GRAPHSHARD_COMMON_STATUS_MACROS_H_
#define GRAPHSHARD_COMMON_STATUS_MACROS_H_

// RETURN_IF_ERROR(expr): returns the absl::Status of expr from the enclosing function unless ok.
// ASSIGN_OR_RETURN(lhs, expr): evaluates an absl::StatusOr<T>; returns its status on error,
// otherwise moves the value into lhs (which may be a declaration: `auto x`).

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GRAPHSHARD_CONCAT_INNER_(a, b) a##b
#define GRAPHSHARD_CONCAT_(a, b) GRAPHSHARD_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status graphshard_status_ = (expr);      \
    if (!graphshard_status_.ok()) return graphshard_status_; \
  } while (0)

#define GRAPHSHARD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                      \
  if (!tmp.ok()) return std::move(tmp).status();          \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  GRAPHSHARD_ASSIGN_OR_RETURN_IMPL_(GRAPHSHARD_CONCAT_(graphshard_statusor_, __LINE__), lhs, expr)

#endif  // GRAPHSHARD_COMMON_STATUS_MACROS_H_
