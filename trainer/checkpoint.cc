#include "trainer/checkpoint.h"

#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "trainer/internal/session_state.h"

namespace graphshard::trainer {
namespace {

constexpr int64_t kFormat = 2;

torch::Tensor StringTensor(const std::string& s) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

std::string TensorString(const torch::Tensor& t) {
  torch::Tensor c = t.to(torch::kCPU).contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()),
                     static_cast<size_t>(c.numel()));
}

}  // namespace

std::string CheckpointPath(const std::string& dir) { return dir + "/checkpoint.pt"; }

absl::Status SaveCheckpoint(const std::string& dir, SessionState& state,
                            const CheckpointPosition& position) {
  const std::string path = CheckpointPath(dir);
  std::string bytes;
  try {
    torch::serialize::OutputArchive archive, model_archive, optimizer_archive;
    state.model->save(model_archive);
    state.optimizer->save(optimizer_archive);
    archive.write("model", model_archive);
    archive.write("optimizer", optimizer_archive);
    archive.write("position",
                  torch::tensor({kFormat, position.epoch, position.step, position.global_step},
                                torch::kInt64));
    archive.write("sums", torch::tensor({position.loss_sum, position.correct, position.seen},
                                        torch::kFloat64));
    archive.write("config", StringTensor(position.config));
    std::ostringstream out;
    archive.save_to(out);
    bytes = out.str();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("checkpoint ", path, ": ", e.what_without_backtrace()));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("--checkpoint-dir ", dir, ": ", ec.message()));
  return common::WriteFileAtomically(path, bytes);
}

absl::StatusOr<absl::optional<CheckpointPosition>> LoadCheckpoint(const std::string& dir,
                                                                  const std::string& config,
                                                                  SessionState& state) {
  const std::string path = CheckpointPath(dir);
  if (!std::filesystem::exists(path)) return absl::optional<CheckpointPosition>();
  CheckpointPosition p;
  try {
    torch::serialize::InputArchive archive, model_archive, optimizer_archive;
    archive.load_from(path, state.device);
    torch::Tensor config_t, position, sums;
    archive.read("config", config_t);
    p.config = TensorString(config_t);
    if (p.config != config) {
      return absl::FailedPreconditionError(absl::StrCat("checkpoint ", path,
                                                        " is of another run: its settings are '",
                                                        p.config, "', this run's '", config, "'"));
    }
    archive.read("position", position);
    archive.read("sums", sums);
    position = position.to(torch::kCPU);
    sums = sums.to(torch::kCPU);
    if (position.numel() != 4 || position[0].item<int64_t>() != kFormat || sums.numel() != 3) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint ", path, ": unknown format (format ",
          position.numel() == 4 ? position[0].item<int64_t>() : -1, ", this trainer reads ",
          kFormat, "; format 1 was written before the optimizer's state became one flat tensor)"));
    }
    p.epoch = position[1].item<int64_t>();
    p.step = position[2].item<int64_t>();
    p.global_step = position[3].item<int64_t>();
    p.loss_sum = sums[0].item<double>();
    p.correct = sums[1].item<double>();
    p.seen = sums[2].item<double>();
    archive.read("model", model_archive);
    archive.read("optimizer", optimizer_archive);
    state.model->load(model_archive);
    state.optimizer->load(optimizer_archive);
    // The load may give the parameters new storage: back into the flat tensor the optimizer
    // steps (tensors.h).
    if (absl::Status s = BindToFlat(state.params, state.flat); !s.ok()) {
      return absl::DataLossError(absl::StrCat("checkpoint ", path, ": ", s.message()));
    }
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat("checkpoint ", path, ": ", e.what_without_backtrace()));
  }
  return absl::optional<CheckpointPosition>(p);
}

absl::Status LoadCheckpointModel(
    const std::string& dir, SessionState& state,
    const std::function<absl::Status(const std::string& config)>& check_config) {
  const std::string path = CheckpointPath(dir);
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(
        absl::StrCat("no checkpoint at ", path, " (train with --checkpoint-dir ", dir, " first)"));
  }
  try {
    torch::serialize::InputArchive archive, model_archive;
    archive.load_from(path, state.device);
    torch::Tensor config_t;
    archive.read("config", config_t);
    if (absl::Status s = check_config(TensorString(config_t)); !s.ok()) return s;
    archive.read("model", model_archive);
    // Module::load takes the saved tensors' shapes as they are (Tensor::set_): compare after.
    std::vector<std::pair<std::string, std::vector<int64_t>>> want;
    for (const auto& named : state.model->named_parameters()) {
      want.emplace_back(named.key(), named.value().sizes().vec());
    }
    try {
      state.model->load(model_archive);
    } catch (const c10::Error& e) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", path, " holds parameters of another model: ", e.what_without_backtrace()));
    }
    for (const auto& [name, sizes] : want) {
      // By value: named_parameters() returns a temporary dict (a reference would dangle).
      const torch::Tensor got = state.model->named_parameters()[name];
      if (got.sizes().vec() != sizes) {
        return absl::FailedPreconditionError(absl::StrCat(
            "checkpoint ", path, ": parameter ", name, " is ", c10::str(got.sizes()), " there, ",
            c10::str(c10::IntArrayRef(sizes)),
            " in the model this graph and these flags build (feature or class dims differ: "
            "another graph)"));
      }
    }
    return absl::OkStatus();
  } catch (const c10::Error& e) {
    return absl::DataLossError(absl::StrCat("checkpoint ", path, ": ", e.what_without_backtrace()));
  }
}

}  // namespace graphshard::trainer
