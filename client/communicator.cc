#include "client/communicator.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace graphshard::client {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  const char* name() const override { return "local"; }
  absl::Status AllReduce(absl::Span<float>, ReduceOp) override { return absl::OkStatus(); }
  absl::Status AllReduce(absl::Span<double>, ReduceOp) override { return absl::OkStatus(); }
  absl::Status AllReduce(absl::Span<int64_t>, ReduceOp) override { return absl::OkStatus(); }
  absl::Status Broadcast(absl::Span<float>, int) override { return absl::OkStatus(); }
};

}  // namespace

absl::StatusOr<std::vector<std::string>> AllGatherStrings(Communicator& comm,
                                                          const std::string& mine,
                                                          size_t max_bytes) {
  // Slot of rank r: its length (-1: too long), then max_bytes rounded up to whole words.
  const size_t words = 1 + (max_bytes + 7) / 8;
  const size_t world = static_cast<size_t>(comm.world_size());
  std::vector<int64_t> slots(world * words, 0);
  int64_t* own = slots.data() + static_cast<size_t>(comm.rank()) * words;
  if (mine.size() > max_bytes) {
    own[0] = -1;
  } else {
    own[0] = static_cast<int64_t>(mine.size());
    std::memcpy(own + 1, mine.data(), mine.size());
  }
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(slots), ReduceOp::kSum));
  std::vector<std::string> out;
  for (size_t r = 0; r < world; ++r) {
    const int64_t* slot = slots.data() + r * words;
    if (slot[0] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", r, "'s string is over ", max_bytes, " bytes"));
    }
    out.emplace_back(reinterpret_cast<const char*>(slot + 1), static_cast<size_t>(slot[0]));
  }
  return out;
}

std::unique_ptr<Communicator> CreateLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

absl::StatusOr<int> ParseNcclQueueDepth(const EnvLookup& env) {
  const absl::optional<std::string> wait = env("GRAPHSHARD_NCCL_WAIT_EACH_STEP");
  if (wait.has_value() && *wait == "1") return 0;
  const absl::optional<std::string> v = env("GRAPHSHARD_NCCL_QUEUE_DEPTH");
  if (!v.has_value() || v->empty()) return kDefaultNcclQueueDepth;
  int depth = -1;
  if (!absl::SimpleAtoi(*v, &depth) || depth < 0 || depth > 64) {
    return absl::InvalidArgumentError(absl::StrCat("GRAPHSHARD_NCCL_QUEUE_DEPTH='", *v,
                                                   "': expected a whole number from 0 to 64 (the "
                                                   "gradient all-reduces left running)"));
  }
  return depth;
}

}  // namespace graphshard::client
