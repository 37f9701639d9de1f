// Stands in for nccl_communicator.cc in builds without CUDA and NCCL.
#include "absl/status/status.h"
#include "client/communicator.h"
#include "trainer/communicators.h"

namespace graphshard::trainer {

bool HaveNccl() { return false; }

absl::StatusOr<std::unique_ptr<client::Communicator>> CreateNcclCommunicator(
    const client::RendezvousConfig&, std::unique_ptr<client::KeyValueStore>, const NcclOptions&) {
  return absl::UnimplementedError(
      "this graphshard-trainer was built without CUDA and NCCL (use --backend gloo, or rebuild "
      "where nvcc and nccl.h are found)");
}

}  // namespace graphshard::trainer
