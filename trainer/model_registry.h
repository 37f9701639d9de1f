#ifndef GRAPHSHARD_TRAINER_MODEL_REGISTRY_H_
#define GRAPHSHARD_TRAINER_MODEL_REGISTRY_H_

// The model registry: --model (a ModelKind, choices.h) -> the factory that builds it for a
// graph. A new model is its own file (a GnnModelImpl, model.h, and its factory, declared below),
// a ModelKind value with its row in choices.h's kModels, and one row in model_registry.cc.
// No Torch in this header (the models are only named); the factories are in the Torch library.

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "trainer/choices.h"
#include "trainer/data_types.h"

namespace graphshard::trainer {

class GnnModelImpl;  // model.h

struct ModelOptions {
  ModelKind kind = ModelKind::kSage;
  int64_t hidden_channels = 64;
  int64_t num_layers = 2;  // one per sampling hop; gin: GIN layers
  double dropout = 0.5;
};

using ModelFactory = absl::StatusOr<std::shared_ptr<GnnModelImpl>> (*)(const ServerMetadata& md,
                                                                       const ModelOptions& o);

// Builds options.kind's model for the graph `md`. Parameters are created in a fixed order from
// torch's global generator (seed it first). InvalidArgument when the model does not fit the
// graph (gcn on a heterogeneous graph, a homogeneous graph without features, gin on a graph that
// is not a graph-classification dataset).
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
