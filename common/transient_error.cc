#include "common/transient_error.h"

namespace graphshard::common {

bool IsTransientError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kResourceExhausted:
      return true;
    default:
      return false;
  }
}

}  // namespace graphshard::common
