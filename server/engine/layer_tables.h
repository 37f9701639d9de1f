#ifndef GRAPHSHARD_SERVER_ENGINE_LAYER_TABLES_H_
#define GRAPHSHARD_SERVER_ENGINE_LAYER_TABLES_H_

// Full-graph inference, layer by layer (DistDGL's way; trainer/README.md, "Inference"): the
// outputs of layer l for the nodes this part owns are put here as rows of a table, and the
// table then stands in for the features when layer l + 1's blocks are built: a stream or a
// peer's gather names the table, and reads a LocalPart whose node rows are the table's (View),
// with the part's own ids, labels and edges. So remote rows come from peers the way features
// do (Peers::GatherTable), over the same gather path.
//
// A table is filled, then read: the first read seals it (puts after that are refused), and it
// can only be read once every owned node of each type it has rows for has its row. Tables are
// numbered by the client (nonzero; one per layer of an inference run) and freed by Drop.
// Thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/engine/types.h"

namespace graphshard::engine {

struct LayerTableLimits {
  int max_tables = 8;        // tables held at once (ResourceExhausted beyond)
  int64_t max_dim = 1 << 16;  // columns of a table
};

class LayerTables {
 public:
  // `base` (this server's part) must outlive the tables and every view handed out.
  explicit LayerTables(const LocalPart& base, LayerTableLimits limits = {});
  ~LayerTables();

  // Writes rows[i] (`dim` floats each) as the row of node ids[i] of `node_type` ("" = the target
  // type) in `table`, creating it. Returns how many owned nodes of the type still have no row.
  // InvalidArgument: table 0, unknown type, dim outside 1..max_dim or not the table's earlier
  // dim for the type, rows not ids x dim, an id this part does not own (named). FailedPrecondition
  // once the table is being read. ResourceExhausted beyond max_tables.
  absl::StatusOr<int64_t> Put(uint64_t table, absl::string_view node_type, int64_t dim,
                              absl::Span<const int64_t> ids, absl::Span<const float> rows);

  // The part with `table`'s rows as node features (a type without rows in the table has
  // feat_dim 0); seals the table. The view lives while a holder keeps it, also after Drop.
  // NotFound without such a table; FailedPrecondition naming the type and how many of its
  // owned nodes have no row yet.
  absl::StatusOr<std::shared_ptr<const LocalPart>> View(uint64_t table);

  // GatherFeatures over View(table): rows converted to `dtype`, labels of the part.
  absl::StatusOr<std::vector<FeatureBlock>> Gather(uint64_t table, absl::Span<const TypedIds> items,
                                                   FeatureDtype dtype);

  // Forgets `table` (nothing if there is none); memory goes when its last view does.
  void Drop(uint64_t table);

 private:
  struct Table;
  const LocalPart& base_;
  const LayerTableLimits limits_;
  absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<Table>> tables_ ABSL_GUARDED_BY(mu_);
};

// The peers of a stream over one layer table: sampling as `inner` does, feature gathers of
// other parts as GatherTable(table), never from same-host mapped parts (their tables live in
// their servers). `inner` must outlive it. Thread-safe if `inner` is.
class TablePeers final : public Peers {
 public:
  TablePeers(Peers& inner, uint64_t table) : inner_(inner), table_(table) {}
  void SampleOneHop(int part, OneHopRequest request,
                    Callback<std::vector<HopResult>> done) override {
    inner_.SampleOneHop(part, std::move(request), std::move(done));
  }
  void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                      Callback<std::vector<FeatureBlock>> done) override {
    inner_.GatherTable(part, table_, std::move(items), dtype, std::move(done));
  }
  const LocalPart* SamplingPart(int part) override { return inner_.SamplingPart(part); }

 private:
  Peers& inner_;
  const uint64_t table_;
};

// What a stream over one layer table reads (EpochStream::Start): the view of the part with the
// table's rows (LayerTables::View) and the peers asked for their rows of the table. Whoever
// reads through it holds it by shared_ptr, the view with it: a stream's jobs may outlive the
// stream, and the table may be dropped meanwhile. `inner` must outlive the source.
struct TableSource {
  TableSource(std::shared_ptr<const LocalPart> table_view, Peers& inner, uint64_t table)
      : view(std::move(table_view)), peers(inner, table) {}
  const std::shared_ptr<const LocalPart> view;  // never null
  TablePeers peers;
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_LAYER_TABLES_H_
