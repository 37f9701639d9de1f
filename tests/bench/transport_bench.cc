// Bulk transport microbenchmark (docs/TRANSPORT.md). JSON lines on stdout; progress on stderr.
//   transport_bench [--payload-mib 64] [--reps 20] [--in-flight 1,4] [--connections 2]
//                   [--partition DIR --rows 200000 --piece-mib 4,8,16]
// Measured in one run, each against raw TCP loopback (one stream, one sender and one receiver
// thread, 1 MiB writes: the ceiling of one connection) measured in the same run:
//   transport_bulk_<k>inflight: request/response over the Asio TCP transport on 127.0.0.1, a
//     handler answering each small request with --payload-mib MiB in one array (a feature-row
//     sized answer, kept in memory: no gather), k requests in flight; payload bytes per second.
//   with --partition (2 or more parts): two real partition servers (parts 0 and 1) on port 0,
//     and the peer path as a server uses it: GatherFeatures of --rows rows of part 1 (its first
//     rows, float32) through GrpcPeers (protobuf bytes inline, no shared memory) and through
//     BulkPeers (the bulk transport); feature bytes per second, each against raw TCP, and bulk
//     against gRPC; then the same through engine::SplitGathers (the server's default: the
//     request asked in pieces of --piece-mib MiB, all in flight), each against the whole request
//     on the same transport.
// Both sides run with the allocator settings graphshard-server starts with (server/malloc_tuning.h:
// freed frame buffers kept for the next frame); GRAPHSHARD_MALLOC_TUNED=1 in the environment
// keeps glibc's defaults (every frame above 32 MiB then arrives in fresh, faulted-in pages).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/flags.h"
#include "common/partition_part.h"
#include "server/bulk_peers.h"
#include "server/engine/split_gathers.h"
#include "server/malloc_tuning.h"
#include "server/partition_server.h"
#include "tests/bench/bench_util.h"
#include "transport/asio_transport.h"

namespace graphshard::bench {
namespace {

struct Flags {
  int payload_mib = 64;
  int reps = 20;
  std::string in_flight = "1,4";
  int connections = 2;
  std::string partition;
  int64_t rows = 200000;
  std::string piece_mib = "4,8,16";
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs `reps` calls of `issue(done)`, `k` at a time; returns seconds, or -1 on an error.
template <typename Issue>
double Timed(int reps, int k, Issue issue) {
  std::vector<std::future<bool>> waiting;
  int issued = 0, ok = 0;
  const double t0 = Now();
  while (ok < reps) {
    while (issued < reps && std::ssize(waiting) < k) {
      auto promise = std::make_shared<std::promise<bool>>();
      waiting.push_back(promise->get_future());
      issue([promise](bool good) { promise->set_value(good); });
      ++issued;
    }
    if (waiting.front().wait_for(std::chrono::seconds(120)) != std::future_status::ready ||
        !waiting.front().get()) {
      return -1;
    }
    waiting.erase(waiting.begin());
    ++ok;
  }
  return Now() - t0;
}

int RawTransport(const Flags& f, double tcp_bps) {
  const size_t payload = static_cast<size_t>(f.payload_mib) << 20;
  auto answer = std::make_shared<std::vector<char>>(payload, 3);
  // The handler answers with a view of one prepared buffer (no copy per answer).
  class View final : public transport::Body {
   public:
    explicit View(std::shared_ptr<std::vector<char>> b) : b_(std::move(b)) {}
    std::vector<absl::Span<const char>> Arrays() const override { return {{b_->data(), b_->size()}}; }

   private:
    std::shared_ptr<std::vector<char>> b_;
  };
  std::map<uint16_t, transport::Handler> handlers;
  handlers[1] = [answer](transport::Received, transport::Reply reply) {
    reply(std::make_unique<View>(answer));
  };
  transport::AsioOptions options;
  options.connections_per_peer = f.connections;
  auto server = transport::AsioServer::Start("127.0.0.1", 0, handlers, options);
  if (!server.ok()) {
    std::fprintf(stderr, "transport_bench: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  transport::AsioClient client(options);
  transport::Endpoint peer{absl::StrCat("127.0.0.1:", (*server)->port()), "bench server"};
  for (absl::string_view k_text : absl::StrSplit(f.in_flight, ',')) {
    int k = 1;
    if (!absl::SimpleAtoi(k_text, &k) || k < 1) return 2;
    auto issue = [&](std::function<void(bool)> done) {
      client.Request(peer, 1, std::make_unique<transport::OwnedBody>(
                                  std::vector<std::vector<char>>{std::vector<char>(64, 1)}),
                     absl::Now() + absl::Seconds(60),
                     [done, payload](absl::StatusOr<transport::Received> r) {
                       done(r.ok() && r->arrays.size() == 1 && r->arrays[0].size() == payload);
                     });
    };
    Timed(2, k, issue);  // warm-up: connections open, buffers faulted in
    const double s = Timed(f.reps, k, issue);
    if (s <= 0) {
      std::fprintf(stderr, "transport_bench: bulk requests failed\n");
      return 1;
    }
    PrintCompared(absl::StrCat("transport_bulk_", k, "inflight_bytes_per_s"),
                  static_cast<double>(payload) * f.reps / s, "B/s", "tcp_loopback", tcp_bps);
  }
  return 0;
}

int PeerPath(const Flags& f, double tcp_bps) {
  std::vector<std::unique_ptr<server::PartitionServer>> servers;
  const std::string registry = std::filesystem::temp_directory_path() /
                               absl::StrCat("transport_bench_registry_", ::getpid());
  for (int p = 0; p < 2; ++p) {
    server::ServerOptions so;
    so.partition_dir = f.partition;
    so.part = p;
    so.registry_dir = registry;
    so.threads = 4;
    auto s = server::PartitionServer::Start(so);
    if (!s.ok()) {
      std::fprintf(stderr, "transport_bench: %s\n", std::string(s.status().message()).c_str());
      return 1;
    }
    servers.push_back(*std::move(s));
  }
  auto part = common::PartitionPart::Load(f.partition, 1, {.verify_checksums = false});
  if (!part.ok()) return 1;
  const common::NodeTypeInfo& type = (*part)->manifest().node_types[0];
  const int64_t begin = type.part_offsets[1];
  const int64_t rows = std::min<int64_t>(f.rows, type.part_offsets[2] - begin);
  std::vector<int64_t> ids(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) ids[static_cast<size_t>(i)] = begin + i;
  const double bytes = static_cast<double>(rows) * static_cast<double>(type.feat_dim) * 4;

  server::PeerOptions po;
  po.registry_dir = registry;
  po.rpc_timeout = absl::Seconds(60);
  server::GrpcPeers grpc(po);
  transport::AsioOptions options;
  options.connections_per_peer = f.connections;
  transport::AsioClient client(options);
  server::BulkPeers bulk(grpc, client, absl::Seconds(60));
  auto measure = [&](engine::Peers& peers) {
    auto issue = [&](std::function<void(bool)> done) {
      peers.GatherFeatures(1, {{type.name, ids}}, engine::FeatureDtype::kFloat32,
                           [done](engine::Answer<std::vector<engine::FeatureBlock>> a) {
                             absl::StatusOr<std::vector<engine::FeatureBlock>> r =
                                 std::move(a).Take();
                             if (!r.ok()) {
                               std::fprintf(stderr, "transport_bench: %s\n",
                                            std::string(r.status().message()).c_str());
                             }
                             done(r.ok());
                           });
    };
    Timed(2, 1, issue);
    const double s = Timed(f.reps, 1, issue);
    return s > 0 ? bytes * f.reps / s : 0.0;
  };
  const double grpc_bps = measure(grpc);
  const double bulk_bps = measure(bulk);
  std::fprintf(stderr, "transport_bench: GatherFeatures of %lld rows x %lld float32 (%.1f MiB)\n",
               static_cast<long long>(rows), static_cast<long long>(type.feat_dim),
               bytes / (1 << 20));
  PrintCompared("peer_gather_grpc_bytes_per_s", grpc_bps, "B/s", "tcp_loopback", tcp_bps);
  PrintCompared("peer_gather_bulk_bytes_per_s", bulk_bps, "B/s", "tcp_loopback", tcp_bps);
  PrintCompared("peer_gather_bulk_vs_grpc", bulk_bps, "B/s", "peer_gather_grpc_bytes_per_s",
                grpc_bps);
  bool pieces_ok = true;
  for (absl::string_view mib_text : absl::StrSplit(f.piece_mib, ',', absl::SkipEmpty())) {
    int mib = 0;
    if (!absl::SimpleAtoi(mib_text, &mib) || mib < 1) return 2;
    const std::map<std::string, int64_t> dims{{type.name, type.feat_dim}};
    engine::SplitGathers bulk_pieces(bulk, dims, int64_t{mib} << 20);
    engine::SplitGathers grpc_pieces(grpc, dims, int64_t{mib} << 20);
    const double bulk_pieces_bps = measure(bulk_pieces);
    const double grpc_pieces_bps = measure(grpc_pieces);
    pieces_ok = pieces_ok && bulk_pieces_bps > 0 && grpc_pieces_bps > 0;
    PrintCompared(absl::StrCat("peer_gather_bulk_pieces_", mib, "mib_bytes_per_s"),
                  bulk_pieces_bps, "B/s", "peer_gather_bulk_bytes_per_s", bulk_bps);
    PrintCompared(absl::StrCat("peer_gather_grpc_pieces_", mib, "mib_bytes_per_s"),
                  grpc_pieces_bps, "B/s", "peer_gather_grpc_bytes_per_s", grpc_bps);
  }
  for (auto& s : servers) s->Shutdown(absl::Seconds(1));
  std::filesystem::remove_all(registry);
  return grpc_bps > 0 && bulk_bps > 0 && pieces_ok ? 0 : 1;
}

}  // namespace
}  // namespace graphshard::bench

int main(int argc, char** argv) {
  graphshard::bench::Flags f;
  graphshard::common::FlagSet flags(
      "usage: transport_bench [--payload-mib N] [--reps N] [--in-flight 1,4] "
      "[--partition DIR --rows N --piece-mib M,...]");
  flags.AddInt("payload-mib", &f.payload_mib, "MIB", "answer size of the raw transport runs",
               {.min = 1, .max = 1024});
  flags.AddInt("reps", &f.reps, "N", "timed requests per measurement", {.min = 1});
  flags.AddString("in-flight", &f.in_flight, "K,...", "requests in flight, one run each");
  flags.AddInt("connections", &f.connections, "N", "TCP connections per peer", {.min = 1});
  flags.AddString("partition", &f.partition, "DIR",
                  "partition folder (2+ parts): also measure the peer GatherFeatures path");
  flags.AddInt64("rows", &f.rows, "N", "rows per GatherFeatures", {.min = 1});
  flags.AddString("piece-mib", &f.piece_mib, "M,...",
                  "piece sizes of the split GatherFeatures runs (empty: none)");
  auto parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "transport_bench: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  if (parsed->help) {
    std::fputs(flags.Usage().c_str(), stdout);
    return 0;
  }
  graphshard::server::ReexecWithMallocTunables(argv, 256);
  const double tcp_bps = graphshard::bench::TcpLoopbackBytesPerSecond(size_t{4} << 30);
  graphshard::bench::PrintResult("tcp_loopback_bytes_per_s", tcp_bps, "B/s");
  int rc = graphshard::bench::RawTransport(f, tcp_bps);
  if (rc == 0 && !f.partition.empty()) rc = graphshard::bench::PeerPath(f, tcp_bps);
  return rc;
}
