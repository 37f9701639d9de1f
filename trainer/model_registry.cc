// The registry's table. No Torch here: the models are reached through their factories only.
#include "trainer/model_registry.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphshard::trainer {
namespace {

// One row per model: a new model is its file and one row here.
constexpr client::ModelInfo kModels[] = {
    {"sage", client::Task::kNode,
     &CreateSageModel},  // heterogeneous GraphSAGE on heterogeneous graphs
    {"gcn", client::Task::kNode, &CreateGcnModel},
    {"gin", client::Task::kGraph, &CreateGinModel},
};

}  // namespace

absl::Span<const client::ModelInfo> RegisteredModels() { return kModels; }

absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateModel(const client::ServerMetadata& md,
                                                          const client::ModelOptions& options) {
  const client::ModelInfo* model = client::FindModel(kModels, options.name);
  if (model == nullptr) {
    std::vector<std::string> names;
    for (const client::ModelInfo& m : kModels) names.emplace_back(m.name);
    return absl::InvalidArgumentError(absl::StrCat("unknown model '", options.name,
                                                   "'; registered: ", absl::StrJoin(names, ", ")));
  }
  return model->create(md, options);
}

absl::StatusOr<int64_t> HomogeneousFeatureDim(const client::ServerMetadata& md,
                                              absl::string_view model) {
  if (md.heterogeneous()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model ", model, " takes homogeneous graphs; this one has ", md.node_types.size(),
        " node types and ", md.edge_types.size(), " edge types (use --model sage)"));
  }
  const int64_t in = md.node_types[0].feat_dim;
  if (in < 1) {
    return absl::InvalidArgumentError("the graph's nodes have no features (feat_dim 0)");
  }
  return in;
}

}  // namespace graphshard::trainer
