// libFuzzer target: the requests a partition server decodes and validates before any work
// (the gRPC path): SampleOneHopRequest, GatherFeaturesRequest and SampleMinibatchRequest as
// protobuf bytes -> server::FromProto -> the engine (engine::LocalPart, engine::BuildMinibatch)
// over a real two-part partition of the tiny test graph, loaded once. The first input byte
// picks the message. The limits are kept small (fanout 8, 3 hops) so that a run stays fast:
// what is fuzzed is the validation, not the cost of a large valid request.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/partition_part.h"
#include "proto/graphshard.pb.h"
#include "rpc/feature_dtype_proto.h"
#include "server/engine/in_process_peers.h"
#include "server/engine/local_part.h"
#include "server/engine/minibatch_builder.h"
#include "server/proto_convert.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/testing/partition_fixture.h"

namespace graphshard::fuzz {
namespace {

constexpr int kParts = 2;

struct Cluster {
  testing::ScratchDir dir;
  std::vector<std::unique_ptr<engine::LocalPart>> parts;
  std::unique_ptr<engine::InProcessPeers> peers;
};

// The cluster lives as long as the process (never destroyed: its parts serve every input);
// its folder is removed when the fuzzer exits.
std::string* cluster_dir = nullptr;
void RemoveClusterDir() {
  std::error_code ignored;
  if (cluster_dir != nullptr) std::filesystem::remove_all(*cluster_dir, ignored);
}

Cluster& TheCluster() {
  static Cluster* cluster = [] {
    auto* c = new Cluster;
    cluster_dir = new std::string(c->dir.path());
    std::atexit(RemoveClusterDir);
    const std::string out = c->dir.Sub("tiny");
    if (auto written = testing::WriteTinyPartition(out, kParts); !written.ok()) {
      Fail(absl::StrCat("WriteTinyPartition: ", written.status().ToString()));
    }
    engine::Limits limits;
    limits.max_fanout = 8;
    limits.max_hops = 3;
    limits.max_batch_size = 64;
    limits.max_request_ids = 4096;
    std::vector<const engine::LocalPart*> views;
    for (int p = 0; p < kParts; ++p) {
      auto part = common::PartitionPart::Load(out, p);
      if (!part.ok()) Fail(absl::StrCat("loading the tiny partition: ", part.status().ToString()));
      auto local = engine::LocalPart::Create(std::move(*part), limits);
      if (!local.ok()) Fail("LocalPart::Create");
      views.push_back(local->get());
      c->parts.push_back(std::move(*local));
    }
    c->peers = std::make_unique<engine::InProcessPeers>(views);
    return c;
  }();
  return *cluster;
}

void OneHop(const engine::LocalPart& local, const uint8_t* data, size_t size) {
  v1::SampleOneHopRequest p;
  if (!p.ParseFromArray(data, static_cast<int>(size))) return;
  auto request = server::FromProto(p);
  CheckErrorNamesSomething(request.status(), "FromProto(SampleOneHopRequest)");
  if (!request.ok()) return;
  auto results = local.SampleOneHop(*request);
  CheckErrorNamesSomething(results.status(), "SampleOneHop");
  if (!results.ok()) return;
  if (results->size() != request->items.size()) Fail("SampleOneHop: one result per item");
  for (size_t i = 0; i < results->size(); ++i) {
    const engine::HopResult& r = (*results)[i];
    if (r.counts.size() != request->items[i].seeds.size()) Fail("one count per seed");
    int64_t total = 0;
    for (int64_t c : r.counts) total += c;
    if (total != static_cast<int64_t>(r.neighbors.size())) Fail("counts != neighbours");
  }
}

void Gather(const engine::LocalPart& local, const uint8_t* data, size_t size) {
  v1::GatherFeaturesRequest p;
  if (!p.ParseFromArray(data, static_cast<int>(size))) return;
  auto items = server::FromProto(p);
  CheckErrorNamesSomething(items.status(), "FromProto(GatherFeaturesRequest)");
  auto dtype = rpc::FeatureDtypeFromProto(p.dtype());
  CheckErrorNamesSomething(dtype.status(), "FromProto(FeatureDtype)");
  if (!items.ok() || !dtype.ok()) return;
  auto blocks = local.GatherFeatures(*items, *dtype);
  CheckErrorNamesSomething(blocks.status(), "GatherFeatures");
  if (blocks.ok() && blocks->size() != items->size()) Fail("GatherFeatures: one block per item");
}

void Minibatch(const engine::LocalPart& local, engine::Peers& peers, const uint8_t* data,
               size_t size) {
  v1::SampleMinibatchRequest p;
  if (!p.ParseFromArray(data, static_cast<int>(size))) return;
  auto request = server::FromProto(p);
  CheckErrorNamesSomething(request.status(), "FromProto(SampleMinibatchRequest)");
  if (!request.ok()) return;
  auto batch = engine::BuildMinibatch(local, peers, *request);
  CheckErrorNamesSomething(batch.status(), "BuildMinibatch");
  if (batch.ok() && batch->batch_size != static_cast<int64_t>(request->seeds.size())) {
    Fail("BuildMinibatch: batch_size != seeds");
  }
}

}  // namespace
}  // namespace graphshard::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fuzz = graphshard::fuzz;
  if (size < 1) return 0;
  fuzz::Cluster& cluster = fuzz::TheCluster();
  const graphshard::engine::LocalPart& local = *cluster.parts[data[0] % fuzz::kParts];
  switch ((data[0] / fuzz::kParts) % 3) {
    case 0:
      fuzz::OneHop(local, data + 1, size - 1);
      break;
    case 1:
      fuzz::Gather(local, data + 1, size - 1);
      break;
    default:
      fuzz::Minibatch(local, *cluster.peers, data + 1, size - 1);
      break;
  }
  return 0;
}
