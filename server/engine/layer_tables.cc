#include "server/engine/layer_tables.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace graphshard::engine {

struct LayerTables::Table {
  struct Rows {
    int64_t dim = 0;  // 0: no row put for the type
    std::vector<float> values;
    std::vector<bool> have;
    int64_t missing = 0;
  };
  std::vector<Rows> types;  // per node type of the part
  // Set by the first read: the rows no longer change. Views point into them and keep the
  // table alive (so not held here: that would be a cycle).
  bool sealed = false;
  std::weak_ptr<const LocalPart> view;
};

LayerTables::LayerTables(const LocalPart& base, LayerTableLimits limits)
    : base_(base), limits_(limits) {}

LayerTables::~LayerTables() = default;

absl::StatusOr<int64_t> LayerTables::Put(uint64_t table, absl::string_view node_type, int64_t dim,
                                         absl::Span<const int64_t> ids,
                                         absl::Span<const float> rows) {
  if (table == 0) return absl::InvalidArgumentError("table 0 is the features; tables start at 1");
  const int t = node_type.empty() ? base_.target_type() : base_.NodeTypeIndex(node_type);
  if (t < 0) return absl::InvalidArgumentError(absl::StrCat("unknown node type '", node_type, "'"));
  if (dim < 1 || dim > limits_.max_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("table ", table, ": dim ", dim, " is outside 1..", limits_.max_dim));
  }
  if (static_cast<int64_t>(rows.size()) != static_cast<int64_t>(ids.size()) * dim) {
    return absl::InvalidArgumentError(absl::StrCat("table ", table, ": ", rows.size(),
                                                   " values for ", ids.size(), " ids of dim ",
                                                   dim));
  }
  const std::string& type_name = base_.node_types()[static_cast<size_t>(t)].name;
  RETURN_IF_ERROR(base_.CheckOwned(t, ids, absl::StrCat("table ", table, " ", type_name, " ids")));
  const common::NodeShard& shard = *base_.node_types()[static_cast<size_t>(t)].shard;
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Table>& entry = tables_[table];
  if (entry == nullptr) {
    if (std::ssize(tables_) > limits_.max_tables) {
      tables_.erase(table);
      return absl::ResourceExhaustedError(absl::StrCat(
          "table ", table, ": ", limits_.max_tables, " layer tables are held already (drop some)"));
    }
    entry = std::make_shared<Table>();
    entry->types.resize(base_.node_types().size());
  }
  Table& tab = *entry;
  if (tab.sealed) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table ", table, " is being read already: put every row before streaming it"));
  }
  Table::Rows& r = tab.types[static_cast<size_t>(t)];
  if (r.dim == 0) {
    r.dim = dim;
    r.values.assign(static_cast<size_t>(shard.num_rows() * dim), 0.0f);
    r.have.assign(static_cast<size_t>(shard.num_rows()), false);
    r.missing = shard.num_rows();
  } else if (r.dim != dim) {
    return absl::InvalidArgumentError(absl::StrCat("table ", table, " ", type_name, ": dim ", dim,
                                                   ", earlier rows had dim ", r.dim));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto row = static_cast<size_t>(ids[i] - shard.begin);
    std::copy_n(rows.data() + i * static_cast<size_t>(dim), dim,
                r.values.data() + row * static_cast<size_t>(dim));
    if (!r.have[row]) {
      r.have[row] = true;
      --r.missing;
    }
  }
  return r.missing;
}

absl::StatusOr<std::shared_ptr<const LocalPart>> LayerTables::View(uint64_t table) {
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) {
    return absl::NotFoundError(absl::StrCat("part ", base_.part_index(), " has no layer table ",
                                            table, " (no rows were put)"));
  }
  Table& tab = *it->second;
  if (std::shared_ptr<const LocalPart> view = tab.view.lock()) return view;
  std::vector<common::NodeShard> shards;
  for (size_t t = 0; t < tab.types.size(); ++t) {
    const Table::Rows& r = tab.types[t];
    const common::NodeShard& b = *base_.node_types()[t].shard;
    if (r.missing > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "layer table ", table, " of part ", base_.part_index(), ": ", r.missing, " of ",
          b.num_rows(), " '", b.ntype, "' rows were not put"));
    }
    common::NodeShard s;
    s.begin = b.begin;
    s.end = b.end;
    s.feat_dim = r.dim;
    s.features = absl::MakeConstSpan(r.values);
    shards.push_back(std::move(s));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<LocalPart> view, LocalPart::WithNodeRows(base_, shards));
  // The view's spans point into the table's rows: it keeps the table (not the map) alive. The
  // deleter lets go of the table when the view goes: a shared_ptr's deleter lives as long as its
  // control block, which the table's weak_ptr to the view keeps, so a `keep` held until then
  // would be a cycle and the table would leak (LeakSanitizer, LayerTablesTest).
  std::shared_ptr<const LocalPart> shared(
      view.release(), [keep = it->second](const LocalPart* p) mutable {
        delete p;
        keep.reset();
      });
  tab.sealed = true;
  tab.view = shared;
  return shared;
}

absl::StatusOr<std::vector<FeatureBlock>> LayerTables::Gather(uint64_t table,
                                                              absl::Span<const TypedIds> items,
                                                              FeatureDtype dtype) {
  ASSIGN_OR_RETURN(std::shared_ptr<const LocalPart> view, View(table));
  return view->GatherFeatures(items, dtype);
}

void LayerTables::Drop(uint64_t table) {
  std::shared_ptr<Table> gone;  // freed outside the lock
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(table);
  if (it == tables_.end()) return;
  gone = std::move(it->second);
  tables_.erase(it);
}

}  // namespace graphshard::engine
