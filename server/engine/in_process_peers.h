#ifndef GRAPHSHARD_SERVER_ENGINE_IN_PROCESS_PEERS_H_
#define GRAPHSHARD_SERVER_ENGINE_IN_PROCESS_PEERS_H_

// engine::Peers over LocalParts of the same process: no network. The baseline of the server
// benchmark (sampling cost without any RPC) and how tests/server/engine/ tests the engine alone.
// Answers on the caller's thread, before returning.

#include <vector>

#include "server/engine/layer_tables.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"

namespace graphshard::engine {

class InProcessPeers final : public Peers {
 public:
  // parts[p] answers for part p; the parts must outlive this object.
  explicit InProcessPeers(std::vector<const LocalPart*> parts) : parts_(std::move(parts)) {}
  // With layer tables: tables[p] answers GatherTable for part p (layer_tables.h); each must
  // outlive this object.
  InProcessPeers(std::vector<const LocalPart*> parts, std::vector<LayerTables*> tables)
      : parts_(std::move(parts)), tables_(std::move(tables)) {}

  void SampleOneHop(int part, OneHopRequest request,
                    Callback<std::vector<HopResult>> done) override {
    done(parts_[part]->SampleOneHop(request));
  }
  void GatherFeatures(int part, std::vector<TypedIds> items, FeatureDtype dtype,
                      Callback<std::vector<FeatureBlock>> done) override {
    done(parts_[part]->GatherFeatures(items, dtype));
  }
  void GatherTable(int part, uint64_t table, std::vector<TypedIds> items, FeatureDtype dtype,
                   Callback<std::vector<FeatureBlock>> done) override {
    if (std::ssize(tables_) <= part) return Peers::GatherTable(part, table, items, dtype, done);
    done(tables_[part]->Gather(table, items, dtype));
  }

 private:
  std::vector<const LocalPart*> parts_;
  std::vector<LayerTables*> tables_;
};

}  // namespace graphshard::engine

#endif  // GRAPHSHARD_SERVER_ENGINE_IN_PROCESS_PEERS_H_
