#include "trainer/communicator.h"

namespace graphshard::trainer {
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

std::unique_ptr<Communicator> CreateLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

}  // namespace graphshard::trainer
