// The registry's table. No Torch here: the models are reached through their factories only.
#include "trainer/model_registry.h"

#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphshard::trainer {
namespace {

struct ModelEntry {
  ModelKind kind;
  ModelFactory create;
};

// One row per ModelKind, in choices.h's kModels order.
constexpr ModelEntry kRegistry[] = {
    {ModelKind::kSage, &CreateSageModel},
    {ModelKind::kGcn, &CreateGcnModel},
    {ModelKind::kGin, &CreateGinModel},
};

constexpr bool RegistryMatchesCatalog() {
  if (std::size(kRegistry) != std::size(kModels)) return false;
  for (size_t i = 0; i < std::size(kRegistry); ++i) {
    if (kRegistry[i].kind != kModels[i].kind) return false;
  }
  return true;
}
static_assert(RegistryMatchesCatalog(), "one kRegistry row per kModels row, in the same order");

}  // namespace

absl::StatusOr<std::shared_ptr<GnnModelImpl>> CreateModel(const ServerMetadata& md,
                                                          const ModelOptions& options) {
  const size_t i = static_cast<size_t>(options.kind);
  if (i >= std::size(kRegistry)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown model kind ", i));
  }
  return kRegistry[i].create(md, options);
}

absl::StatusOr<int64_t> HomogeneousFeatureDim(const ServerMetadata& md, absl::string_view model) {
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
