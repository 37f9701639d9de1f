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
#include "client/choices.h"
#include "client/data_types.h"
#include "client/model_info.h"

namespace graphshard::trainer {

// The registry's table (model_registry.cc), in --help order; the first row of a task is its
// default model. Thread-safe: a constant table.
absl::Span<const client::ModelInfo> RegisteredModels();

// Builds options.name's model for the graph `md`. Parameters are created in a fixed order from
// torch's global generator (seed it first). InvalidArgument when the model does not fit the
// graph (gcn on a heterogeneous graph, a homogeneous graph without features, gin on a graph that
// is not a graph-classification dataset), or when no model of that name is registered.
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateModel(const client::ServerMetadata& md,
                                                          const client::ModelOptions& options);

// The factories, each defined in its model's file.
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateSageModel(const client::ServerMetadata& md,
                                                              const client::ModelOptions& options);
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateGcnModel(const client::ServerMetadata& md,
                                                             const client::ModelOptions& options);
absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateGinModel(const client::ServerMetadata& md,
                                                             const client::ModelOptions& options);

// For models of homogeneous graphs: the nodes' feature dimension. InvalidArgument naming
// `model` for a heterogeneous graph, or one whose nodes have no features.
absl::StatusOr<int64_t> HomogeneousFeatureDim(const client::ServerMetadata& md,
                                              absl::string_view model);

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_MODEL_REGISTRY_H_
