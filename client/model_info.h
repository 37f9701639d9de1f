#ifndef GRAPHSHARD_CLIENT_MODEL_INFO_H_
#define GRAPHSHARD_CLIENT_MODEL_INFO_H_

// What the Torch-free side knows of a model: its options, and the registry row that names it
// (--model spelling, task, factory). The table itself and the factories live in the LibTorch
// trainer (trainer/model_registry.h); the option parser is handed the table instead of linking
// it, so that this header and its users need no Torch. A factory's result type is only
// forward-declared here.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/choices.h"
#include "client/data_types.h"

namespace graphshard::trainer {
class GnnModelImpl;  // trainer/model.h: the LibTorch model a factory builds
}  // namespace graphshard::trainer

namespace graphshard::client {

struct ModelOptions {
  std::string name = "sage";  // a row of RegisteredModels()
  int64_t hidden_channels = 64;
  int64_t num_layers = 2;  // one per sampling hop; gin: GIN layers
  double dropout = 0.5;
  // Link prediction (--task link): the size of the nodes' output embeddings (0: the target
  // type's classes) and, on a heterogeneous graph, the node types embedded (empty: the target).
  int64_t out_channels = 0;
  std::vector<int> output_types{};
};

using ModelFactory = absl::StatusOr<std::shared_ptr<trainer::GnnModelImpl>> (*)(
    const ServerMetadata& md, const ModelOptions& o);

// One registered model: its --model spelling, the task it trains, its factory.
struct ModelInfo {
  absl::string_view name;
  Task task;
  ModelFactory create;
};

// The row named `name` in `models`, or nullptr. Inline: the Torch-free option parser uses it.
inline const ModelInfo* FindModel(absl::Span<const ModelInfo> models, absl::string_view name) {
  for (const ModelInfo& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_MODEL_INFO_H_
