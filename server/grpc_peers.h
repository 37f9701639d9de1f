#ifndef GRAPHSHARD_SERVER_GRPC_PEERS_H_
#define GRAPHSHARD_SERVER_GRPC_PEERS_H_

// engine::Peers over gRPC: one channel per peer part, found in an explicit address list or in
// the registry directory (looked up lazily, so peers may start in any order). Every call has a
// deadline and channels ping their server (rpc::RpcOptions keepalive); errors name the part and
// address. A part with replicas is asked at one of them (spread by this server's part and
// replica); a call that fails for want of the peer (UNAVAILABLE, DEADLINE_EXCEEDED, ...) drops
// the peer, so that the next call resolves the part again (a restarted server's new address,
// or the next replica). Optionally, a peer on this host has its part
// mapped read-only from the partition folder, and its feature rows are read from there instead
// of through GatherFeatures (PeerFeatures::kLocal). Thread-safe.

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/graphshard.grpc.pb.h"
#include "rpc/options.h"
#include "rpc/security.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/server_stats.h"

namespace graphshard::server {

// How feature rows of other parts are fetched.
enum class PeerFeatures {
  kRpc,    // always GatherFeatures (shared memory for the answer when on the same host)
  kLocal,  // same-host peers: read their part's rows from its mmap'ed files; others: kRpc
};

// How other parts are sampled.
enum class PeerSampling {
  kRpc,    // always SampleOneHop
  kLocal,  // same-host peers: sample their part from its mmap'ed files; others: kRpc
};

struct PeerOptions {
  // index = part ("a:1" or replicas "a:1+b:1"); if empty, use registry_dir
  std::vector<std::string> addresses;
  std::string registry_dir;
  absl::Duration rpc_timeout = absl::Seconds(30);
  rpc::RpcOptions rpc;     // channels (keepalive)
  int self_replica = 0;    // spreads the parts' replicas over the servers asking them
  // Sent with feature gathers: a peer with the same host id answers through shared memory.
  std::string host_id;
  // kLocal: a peer whose GetMetadata gives this host id (and the same part layout) and whose
  // part loads from partition_dir is read in-process (MappedPart). Anything else falls back to
  // the RPC; a peer that cannot be reached yet is asked again next time.
  PeerFeatures peer_features = PeerFeatures::kRpc;
  PeerSampling peer_sampling = PeerSampling::kRpc;  // kLocal: the same mapping, for sampling
  std::string this_host_id;
  std::string partition_dir;
  int self_part = -1;
  engine::Limits limits;
  // Where the bytes of peer requests and answers are counted (Stats.peer_*_bytes_*); may be null.
  std::shared_ptr<PeerTraffic> traffic;
};

class GrpcPeers final : public engine::Peers {
 public:
  explicit GrpcPeers(PeerOptions options) : options_(std::move(options)) {}
  ~GrpcPeers() override;  // stops the liveness probe (at most one health check, bounded)

  // Liveness of peers this server uses (docs/DEPLOY.md: a stopped peer is noticed within 2x the
  // stall timeout even when no call is in flight, e.g. every row cached or the part mapped):
  // every `every`, each resolved peer gets a health check with deadline `every`; one that
  // fails for want of the peer is forgotten and logged ("peer part P at ADDR lost (...)") as a
  // failed call would be. Call once.
  void StartLivenessProbe(absl::Duration every);

  void SampleOneHop(int part, engine::OneHopRequest request,
                    Callback<std::vector<engine::HopResult>> done) override;
  void GatherFeatures(int part, std::vector<engine::TypedIds> items, engine::FeatureDtype dtype,
                      Callback<std::vector<engine::FeatureBlock>> done) override;
  void GatherTable(int part, uint64_t table, std::vector<engine::TypedIds> items,
                   engine::FeatureDtype dtype,
                   Callback<std::vector<engine::FeatureBlock>> done) override;
  // With PeerFeatures::kLocal, the peer's part mapped from partition_dir when the peer is on
  // this host; else nullptr. The first call for a part asks its metadata (deadline
  // rpc_timeout) and loads it (no checksums: the peer verified the same files when it started).
  const engine::LocalPart* MappedPart(int part) override;
  // With PeerSampling::kLocal, the same mapped part (nullptr otherwise).
  const engine::LocalPart* SamplingPart(int part) override;

  // Where part `part` takes bulk transport requests (server/bulk_peers.h): the host of its
  // gRPC address with the bulk_port of its GetMetadata (deadline rpc_timeout); bulk_address is
  // empty when it publishes none; shm_answers: the peer has our host_id (set only with shared
  // memory on), so its GatherFeatures answers come through shared memory. Unavailable, naming
  // part and address, if it cannot be asked.
  struct BulkPeer {
    std::string grpc_address;
    std::string bulk_address;
    bool shm_answers = false;
  };
  absl::StatusOr<BulkPeer> BulkAddress(int part);

 private:
  struct Peer {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::shared_ptr<v1::PartitionService::Stub> stub;
  };
  void ProbeLoop(absl::Duration every);
  // Unavailable naming the part if it cannot be resolved.
  absl::StatusOr<std::shared_ptr<Peer>> PeerFor(int part);
  // After a failed call to `address` for want of the peer (`why`): the next call resolves `part`
  // again, starting at its next replica. Logs the loss once per resolved peer.
  void Forget(int part, const std::string& address, const std::string& why);
  // The peer's part if it can be mapped here; nullptr if it is elsewhere or does not load;
  // Unavailable if the peer could not be asked (not decided, asked again later).
  absl::StatusOr<std::unique_ptr<engine::LocalPart>> MapIfSameHost(int part);
  // The same-host peer's part mapped from partition_dir (decided once per part), or nullptr.
  const engine::LocalPart* Mapped(int part);
  // What a gather from a same-host peer needs: its same-host proof (Metadata.host_proof_name
  // read here, shm/host_proof.h) and the prefix its segments carry (Metadata.shm_prefix).
  struct PeerShm {
    std::string host_proof;  // "" on another host, unproven, or unreachable: rows come inline
    std::string prefix;
  };
  // Asked once per address (with a token, the peer must prove it serves `part`).
  PeerShm PeerShmFor(int part, const Peer& peer);

  const PeerOptions options_;
  absl::Mutex mu_;
  // shared: a call in flight keeps its stub while the part is resolved again.
  std::vector<std::shared_ptr<Peer>> peers_ ABSL_GUARDED_BY(mu_);
  std::vector<int> rotation_ ABSL_GUARDED_BY(mu_);  // per part: failures seen, picks the replica
  struct LossLog {
    std::string address;
    absl::Time at;
  };
  std::map<int, LossLog> lost_ ABSL_GUARDED_BY(mu_);  // per part: the last loss logged
  std::map<std::string, PeerShm> peer_shm_ ABSL_GUARDED_BY(mu_);  // by address
  // This server's key as an asker: same-host peers name the segments they answer with for it
  // (GatherFeaturesRequest.shm_key), so it opens and unlinks no other segment.
  const std::string shm_key_ = rpc::NewNonce();
  bool stop_probe_ ABSL_GUARDED_BY(mu_) = false;
  std::thread probe_;
  // MappedPart's decisions per part: not yet decided, mapped, or read through the RPC.
  enum class Mapping { kUndecided, kMapped, kRpc };
  absl::Mutex map_mu_;
  std::vector<Mapping> mapping_ ABSL_GUARDED_BY(map_mu_);
  std::vector<std::unique_ptr<engine::LocalPart>> mapped_ ABSL_GUARDED_BY(map_mu_);
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_GRPC_PEERS_H_
