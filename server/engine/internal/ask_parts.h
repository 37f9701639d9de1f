#ifndef GRAPHSHARD_SERVER_ENGINE_INTERNAL_ASK_PARTS_H_
#define GRAPHSHARD_SERVER_ENGINE_INTERNAL_ASK_PARTS_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "server/engine/peers.h"

namespace graphshard::engine::internal {

// Sends requests[p] to every part p with has_request[p]: remote parts asynchronously through
// `remote(p, request, done)`, the local part `self` in-process through `local(request)` while the
// remote calls are in flight; waits for all. Returns the per-part results (nullopt where nothing
// was asked) or the first error, prefixed with its part. Deferred answers are finished here, on
// the calling thread, after all arrived.
template <typename Result, typename Request, typename Remote, typename Local>
absl::StatusOr<std::vector<std::optional<Result>>> AskParts(std::vector<Request>& requests,
                                                            const std::vector<bool>& has_request,
                                                            int self, Remote remote,
                                                            Local local) {
  const int k = static_cast<int>(requests.size());
  std::vector<std::optional<Answer<Result>>> answers(k);
  int remote_parts = 0;
  for (int p = 0; p < k; ++p) remote_parts += (p != self && has_request[p]);
  absl::BlockingCounter pending(remote_parts);
  for (int p = 0; p < k; ++p) {
    if (p == self || !has_request[p]) continue;
    remote(p, std::move(requests[p]), [&answers, &pending, p](Answer<Result> r) {
      answers[p] = std::move(r);  // each slot is written by one callback only
      pending.DecrementCount();
    });
  }
  if (has_request[self]) answers[self] = local(requests[self]);
  pending.Wait();
  std::vector<std::optional<Result>> out(k);
  for (int p = 0; p < k; ++p) {
    if (!answers[p].has_value()) continue;
    absl::StatusOr<Result> r = std::move(*answers[p]).Take();
    if (!r.ok()) {
      const absl::Status& st = r.status();
      return absl::Status(st.code(), absl::StrCat("part ", p, ": ", st.message()));
    }
    out[p] = *std::move(r);
  }
  return out;
}

}  // namespace graphshard::engine::internal

#endif  // GRAPHSHARD_SERVER_ENGINE_INTERNAL_ASK_PARTS_H_
