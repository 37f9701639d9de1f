#include "trainer/session.h"

#include <cstdlib>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "common/status_macros.h"
#include "trainer/gpu_memory.h"
#include "trainer/internal/session_state.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {

absl::StatusOr<DeviceChoice> PickDevice(const client::TrainerOptions& o, int local_rank) {
  if (o.device != client::DeviceKind::kCuda) return DeviceChoice{};
  if (!torch::cuda::is_available()) {
    return absl::FailedPreconditionError(
        "--device cuda: no CUDA device (or this LibTorch has no CUDA)");
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count));
  return DeviceChoice{.cuda = true, .index = device.index(), .name = device.str()};
}

Session::Session(const client::TrainerOptions& options, std::unique_ptr<SessionState> state,
                 std::string config)
    : options_(options), state_(std::move(state)), config_(std::move(config)) {}

Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>> Session::Create(const client::TrainerOptions& options,
                                                         const DeviceChoice& device,
                                                         const client::ServerMetadata& md,
                                                         int64_t num_layers,
                                                         client::Communicator& comm,
                                                         std::string config) {
  torch::set_num_threads(options.threads);
  // Before any of the session's work: its kernels, and the collectives that follow them
  // (NcclOptions::stream_of), go on this thread's high-priority compute stream.
  if (device.cuda) UseHighPriorityComputeStream(device.index);
  auto state = std::make_unique<SessionState>(
      device.cuda ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device.index))
                  : torch::Device(torch::kCPU));
  {
    // Initial weights are drawn from torch's process-wide generator. Ranks that share a process
    // (the in-process tests) would interleave their draws, so creation is serialized: each
    // rank's start weights are a function of --seed alone.
    static std::mutex init_mu;
    std::lock_guard<std::mutex> lock(init_mu);
    torch::manual_seed(options.seed);
    client::ModelOptions model{.name = options.model,
                               .hidden_channels = options.hidden,
                               .num_layers = num_layers,
                               .dropout = options.dropout};
    if (options.task == client::Task::kLink) {  // node embeddings of both endpoint types
      ASSIGN_OR_RETURN(const int e, client::FindLinkEdgeType(options.link, md));
      const client::EdgeTypeInfo& et = md.edge_types[static_cast<size_t>(e)];
      model.out_channels = options.hidden;
      model.output_types = {et.src, et.dst};
    }
    ASSIGN_OR_RETURN(state->model, CreateModel(md, model));
  }
  const client::Precision precision = client::ResolvePrecision(
      options.precision, device.cuda ? client::DeviceKind::kCuda : client::DeviceKind::kCpu);
  state->model->set_compute({.trim = options.trim == client::Trimming::kOn,
                             .matmul = precision == client::Precision::kBf16
                                           ? MatmulDtype::kBFloat16
                                           : MatmulDtype::kFloat32,
                             .fused_aggregation =
                                 options.aggregation == client::Aggregation::kFused});
  if (options.deterministic) {
    // --deterministic: torch.use_deterministic_algorithms(True). CUDA's index_add (SAGE and
    // GCN aggregation, index_select's backward) then sorts instead of using atomics; cuBLAS
    // needs a fixed workspace, read when its first handle is created (after this point: no
    // matmul has run yet). Process-wide, like PyTorch's setting. An op without a
    // deterministic kernel throws: the run fails with torch's message naming the op
    // (RunTraining's catch) rather than vary silently.
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  }
  if (device.cuda) {
    // --precision tf32: cuBLAS may use TF32 tensor cores for float32 matmuls (PyTorch's
    // torch.set_float32_matmul_precision("high")); process-wide, like PyTorch's setting. On the
    // CPU there are no TF32 units: tf32 computes as fp32 there.
    at::globalContext().setFloat32MatmulPrecision(
        precision == client::Precision::kTf32 ? "high" : "highest");
  }
  state->model->to(state->device);
  state->params = state->model->parameters();
  RETURN_IF_ERROR(BindToFlat(state->params, state->flat));
  {  // Same seed everywhere already; the broadcast makes identical start weights a guarantee.
    torch::NoGradGuard no_grad;
    torch::Tensor values = state->flat.values.detach();  // the parameters' storage, in place
    RETURN_IF_ERROR(BroadcastFromRank0(comm, values));
  }
  // Adam over the one flat tensor: elementwise the same arithmetic as over each parameter (the
  // same step count and bias corrections for all), in a dozen kernels instead of a dozen per
  // parameter. Every parameter takes a step each time, with a zero gradient where a batch did not
  // reach it (PyTorch's optimizers with set_to_none=False).
  state->optimizer = std::make_unique<torch::optim::Adam>(
      std::vector<torch::Tensor>{state->flat.values},
      torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay));
  return std::unique_ptr<Session>(new Session(options, std::move(state), std::move(config)));
}

absl::StatusOr<absl::optional<CheckpointPosition>> Session::Resume() {
  ASSIGN_OR_RETURN(absl::optional<CheckpointPosition> loaded,
                   LoadCheckpoint(options_.checkpoint_dir, config_, *state_));
  if (loaded.has_value()) state_->global_step = loaded->global_step;
  return loaded;
}

absl::Status Session::Save(CheckpointPosition position) {
  position.global_step = state_->global_step;
  position.config = config_;
  return SaveCheckpoint(options_.checkpoint_dir, *state_, position);
}

int64_t Session::global_step() const { return state_->global_step; }

std::string Session::WeightsFingerprint() const {
  return trainer::WeightsFingerprint(state_->params);
}

}  // namespace graphshard::trainer
