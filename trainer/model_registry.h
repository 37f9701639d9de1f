#ifndef GRAPHSHARD_TRAINER_MODEL_REGISTRY_H_
#define GRAPHSHARD_TRAINER_MODEL_REGISTRY_H_

// The model registry: --model NAME -> the task the model trains and the factory that builds it
// for a graph. A new model is its own file (a GnnModelImpl, model.h, and its factory, declared
// below) plus one row in model_registry.cc's table: option parsing, --help, the checkpoint's
// config fingerprint and CreateModel all read that table. No Torch in this header (the models
// are only named); the table and the factories are in the Torch library, so the Torch-free
// option parser is handed the table (ParseTrainerOptions) instead of linking it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "trainer/choices.h"
#include "trainer/data_types.h"

namespace graphshard::trainer {

class GnnModelImpl;  // model.h

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

using ModelFactory = absl::StatusOr<std::shared_ptr<GnnModelImpl>> (*)(const ServerMetadata& md,
                                                                       const ModelOptions& o);

// One registered model: its --model spelling, the task it trains, its factory.
struct ModelInfo {
  absl::string_view name;
  Task task;
  ModelFactory create;
};

// The registry's table (model_registry.cc), in --help order; the first row of a task is its
// default model. Thread-safe: a constant table.
absl::Span<const ModelInfo> RegisteredModels();

// The row named `name` in `models`, or nullptr. Inline: the Torch-free option parser uses it.
inline const ModelInfo* FindModel(absl::Span<const ModelInfo> models, absl::string_view name) {
  for (const ModelInfo& m : models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// Builds options.name's model for the graph `md`. Parameters are created in a fixed order from
// torch's global generator (seed it first). InvalidArgument when the model does not fit the
// graph (gcn on a heterogeneous graph, a homogeneous graph without features, gin on a graph that
// is not a graph-classification dataset), or when no model of that name is registered.
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateModel(const ServerMetadata& md,
                                                          const ModelOptions& options);

// The factories, each defined in its model's file.
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateSageModel(const ServerMetadata& md,
                                                              const ModelOptions& options);
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateGcnModel(const ServerMetadata& md,
                                                             const ModelOptions& options);
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateGinModel(const ServerMetadata& md,
                                                             const ModelOptions& options);

// For models of homogeneous graphs: the nodes' feature dimension. InvalidArgument naming
// `model` for a heterogeneous graph, or one whose nodes have no features.
absl::StatusOr<int64_t> HomogeneousFeatureDim(const ServerMetadata& md, absl::string_view model);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_MODEL_REGISTRY_H_
