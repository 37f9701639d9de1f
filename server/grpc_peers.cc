#include "server/grpc_peers.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/partition_part.h"
#include "common/registry.h"
#include "common/status_macros.h"
#include "common/transient_error.h"
#include "rpc/channel.h"
#include "rpc/health.h"
#include "rpc/security.h"
#include "rpc/status.h"
#include "server/proto_convert.h"
#include "shm/host_proof.h"

namespace graphshard::server {
namespace {

// One in-flight unary call; owns everything gRPC needs until the callback runs.
template <typename Req, typename Resp>
struct Call {
  grpc::ClientContext context;
  Req request;
  Resp response;
};

absl::Status Annotate(const absl::Status& s, int part, const std::string& address) {
  return absl::Status(s.code(), absl::StrCat("peer part ", part, " at ", address, ": ",
                                             s.message()));
}

int64_t ShmBytesOf(const v1::GatherFeaturesResponse& r) { return static_cast<int64_t>(r.shm_size()); }
int64_t ShmBytesOf(const v1::SampleOneHopResponse&) { return 0; }

// Whether a failed call means the peer itself is gone or stuck (then it is resolved again).
bool PeerLost(const grpc::Status& s) { return common::IsTransientError(rpc::FromGrpcStatus(s)); }

// Issues `method` asynchronously and converts the answer with `convert`; counts the messages'
// bytes in `traffic` (if not null). `lost` runs first when the call failed for want of the
// peer. The stub (and its channel) lives until the callback, even if the peer is dropped
// meanwhile.
template <typename Result, typename Req, typename Resp, typename Method>
void Issue(std::shared_ptr<v1::PartitionService::Stub> stub, const std::string& address, int part,
           Req request, absl::Duration timeout, Method method,
           std::shared_ptr<PeerTraffic> traffic, std::function<void(const std::string&)> lost,
           std::function<absl::StatusOr<Result>(const Resp&)> convert,
           engine::Peers::Callback<Result> done) {
  auto call = std::make_shared<Call<Req, Resp>>();
  call->request = std::move(request);
  call->context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  (stub->async()->*method)(
      &call->context, &call->request, &call->response,
      [call, stub, lost = std::move(lost), convert = std::move(convert), done = std::move(done),
       address, part, traffic](grpc::Status status) {
        if (traffic != nullptr) {
          traffic->Add(static_cast<int64_t>(call->request.ByteSizeLong()),
                       status.ok() ? static_cast<int64_t>(call->response.ByteSizeLong()) : 0,
                       status.ok() ? ShmBytesOf(call->response) : 0);
        }
        if (!status.ok()) {
          if (PeerLost(status)) lost(status.error_message());
          done(Annotate(rpc::FromGrpcStatus(status), part, address));
          return;
        }
        // Decoding the message runs where the answer is taken (the builder), not on gRPC's
        // callback thread.
        done(engine::Answer<Result>::Deferred([call, convert, part,
                                               address]() -> absl::StatusOr<Result> {
          absl::StatusOr<Result> result = convert(call->response);
          if (!result.ok()) return Annotate(result.status(), part, address);
          return result;
        }));
      });
}

// True if `m` describes the layout `meta` serves: parts, and per node type the id ranges and
// feature width (the rows the engine would otherwise ask this peer for).
bool SameLayout(const v1::Metadata& meta, const common::Manifest& m) {
  if (meta.num_parts() != m.num_parts || meta.node_types_size() != std::ssize(m.node_types)) {
    return false;
  }
  for (int i = 0; i < meta.node_types_size(); ++i) {
    const v1::NodeTypeMeta& a = meta.node_types(i);
    const common::NodeTypeInfo& b = m.node_types[i];
    if (a.name() != b.name || a.feat_dim() != b.feat_dim ||
        !std::equal(a.part_offsets().begin(), a.part_offsets().end(), b.part_offsets.begin(),
                    b.part_offsets.end())) {
      return false;
    }
  }
  return true;
}

// GetMetadata of the peer serving `part`; with a job token, the peer must prove it and serve
// that part (a registry entry is trusted only then, docs/SECURITY.md). Unauthenticated if not.
grpc::Status GetVerifiedMetadata(v1::PartitionService::Stub& stub, const std::string& token,
                                 int part, absl::Duration timeout, v1::Metadata* meta) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  v1::GetMetadataRequest request;
  if (!token.empty()) request.set_nonce(rpc::NewNonce());
  grpc::Status status = stub.GetMetadata(&context, request, meta);
  if (!status.ok() || token.empty()) return status;
  absl::Status proof = rpc::CheckJobProof(token, request.nonce(), part, meta->job_proof());
  if (proof.ok() && meta->part() != part) {
    proof = absl::UnauthenticatedError(absl::StrCat("serves part ", meta->part()));
  }
  if (!proof.ok()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(proof.message()));
  }
  return status;
}

}  // namespace

absl::StatusOr<std::shared_ptr<GrpcPeers::Peer>> GrpcPeers::PeerFor(int part) {
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(peers_.size()) <= part) {
    peers_.resize(part + 1);
    rotation_.resize(part + 1, 0);
  }
  if (peers_[part] != nullptr) return peers_[part];
  std::vector<std::string> replicas;
  if (!options_.addresses.empty()) {
    if (part >= static_cast<int>(options_.addresses.size())) {
      return absl::UnavailableError(absl::StrCat("part ", part, " is not in --servers (",
                                                 options_.addresses.size(), " addresses)"));
    }
    ASSIGN_OR_RETURN(replicas, common::SplitReplicas(options_.addresses[part]));
  } else if (!options_.registry_dir.empty()) {
    absl::StatusOr<std::vector<std::string>> found =
        common::LookupReplicas(options_.registry_dir, part);
    if (!found.ok()) return absl::UnavailableError(found.status().message());
    replicas = *std::move(found);
  } else {
    return absl::UnavailableError(absl::StrCat(
        "part ", part, " is remote, and neither --servers nor --registry was given"));
  }
  // Servers of different parts and replicas start at different replicas of the peer part; each
  // loss moves on to the next.
  const size_t pick = static_cast<size_t>(options_.self_part + options_.self_replica +
                                          rotation_[part]) % replicas.size();
  auto peer = std::make_shared<Peer>();
  peer->address = replicas[pick];
  peer->channel = rpc::MakeChannel(peer->address, options_.rpc);
  peer->stub = v1::PartitionService::NewStub(peer->channel);
  peers_[part] = peer;
  return peer;
}

GrpcPeers::~GrpcPeers() {
  {
    absl::MutexLock lock(&mu_);
    stop_probe_ = true;
  }
  if (probe_.joinable()) probe_.join();
}

void GrpcPeers::StartLivenessProbe(absl::Duration every) {
  probe_ = std::thread([this, every] { ProbeLoop(every); });
}

void GrpcPeers::ProbeLoop(absl::Duration every) {
  while (true) {
    std::vector<std::pair<int, std::shared_ptr<Peer>>> resolved;
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_probe_), every)) return;
      for (int p = 0; p < std::ssize(peers_); ++p) {
        if (peers_[p] != nullptr) resolved.emplace_back(p, peers_[p]);
      }
    }
    for (const auto& [part, peer] : resolved) {
      const absl::Status health = rpc::CheckHealth(peer->channel, absl::Now() + every);
      // Unimplemented: a server without the health service answers, so it is alive.
      if (health.ok() || absl::IsUnimplemented(health)) continue;
      Forget(part, peer->address, absl::StrCat("health check: ", health.ToString()));
    }
  }
}

void GrpcPeers::Forget(int part, const std::string& address, const std::string& why) {
  absl::MutexLock lock(&mu_);
  if (part < std::ssize(peers_) && peers_[part] != nullptr && peers_[part]->address == address) {
    peers_[part].reset();
    ++rotation_[part];
    peer_shm_.erase(address);
    // Once per address and outage, not at every retry: again after 10 s.
    LossLog& last = lost_[part];
    const absl::Time now = absl::Now();
    if (last.address != address || now - last.at > absl::Seconds(10)) {
      last = {address, now};
      std::fprintf(stderr,
                   "graphshard-server: peer part %d at %s lost (%s); looking the part up again "
                   "at the next call\n",
                   part, address.c_str(), why.c_str());
    }
  }
}

void GrpcPeers::SampleOneHop(int part, engine::OneHopRequest request,
                             Callback<std::vector<engine::HopResult>> done) {
  absl::StatusOr<std::shared_ptr<Peer>> peer = PeerFor(part);
  if (!peer.ok()) {
    done(peer.status());
    return;
  }
  using Async = v1::PartitionService::Stub::async_interface;
  Issue<std::vector<engine::HopResult>, v1::SampleOneHopRequest, v1::SampleOneHopResponse>(
      (*peer)->stub, (*peer)->address, part, ToProto(request), options_.rpc_timeout,
      static_cast<void (Async::*)(grpc::ClientContext*, const v1::SampleOneHopRequest*,
                                  v1::SampleOneHopResponse*, std::function<void(grpc::Status)>)>(
          &Async::SampleOneHop),
      options_.traffic,
      [this, part, address = (*peer)->address](const std::string& why) {
        Forget(part, address, why);
      },
      [](const v1::SampleOneHopResponse& r) { return FromProto(r); }, std::move(done));
}

void GrpcPeers::GatherFeatures(int part, std::vector<engine::TypedIds> items,
                               engine::FeatureDtype dtype,
                               Callback<std::vector<engine::FeatureBlock>> done) {
  GatherTable(part, 0, std::move(items), dtype, std::move(done));
}

void GrpcPeers::GatherTable(int part, uint64_t table, std::vector<engine::TypedIds> items,
                            engine::FeatureDtype dtype,
                            Callback<std::vector<engine::FeatureBlock>> done) {
  absl::StatusOr<std::shared_ptr<Peer>> peer = PeerFor(part);
  if (!peer.ok()) {
    done(peer.status());
    return;
  }
  v1::GatherFeaturesRequest request = ToProto(items, dtype, options_.host_id);
  PeerShm shm;
  if (!options_.host_id.empty()) {
    shm = PeerShmFor(part, **peer);
    request.set_client_host_proof(shm.host_proof);
    request.set_shm_key(shm_key_);
  }
  request.set_table(table);
  using Async = v1::PartitionService::Stub::async_interface;
  Issue<std::vector<engine::FeatureBlock>, v1::GatherFeaturesRequest, v1::GatherFeaturesResponse>(
      (*peer)->stub, (*peer)->address, part, std::move(request), options_.rpc_timeout,
      static_cast<void (Async::*)(grpc::ClientContext*, const v1::GatherFeaturesRequest*,
                                  v1::GatherFeaturesResponse*, std::function<void(grpc::Status)>)>(
          &Async::GatherFeatures),
      options_.traffic,
      [this, part, address = (*peer)->address](const std::string& why) {
        Forget(part, address, why);
      },
      [prefix = shm.prefix, key = shm_key_](const v1::GatherFeaturesResponse& r) {
        return FromProto(r, prefix, key);
      },
      std::move(done));
}

GrpcPeers::PeerShm GrpcPeers::PeerShmFor(int part, const Peer& peer) {
  {
    absl::MutexLock lock(&mu_);
    auto it = peer_shm_.find(peer.address);
    if (it != peer_shm_.end()) return it->second;
  }
  // With a token, only a peer that proved it (GetVerifiedMetadata) names a host proof this
  // server reads, or segments it opens.
  v1::Metadata meta;
  if (!GetVerifiedMetadata(*peer.stub, options_.rpc.token, part, options_.rpc_timeout, &meta)
           .ok()) {
    return {};
  }
  PeerShm shm;
  if (meta.host_id() == options_.host_id && !meta.host_proof_name().empty()) {
    shm.host_proof = shm::ReadHostProof(meta.host_proof_name()).value_or("");
    shm.prefix = meta.shm_prefix();
  }
  absl::MutexLock lock(&mu_);
  peer_shm_[peer.address] = shm;
  return shm;
}

const engine::LocalPart* GrpcPeers::MappedPart(int part) {
  return options_.peer_features == PeerFeatures::kLocal ? Mapped(part) : nullptr;
}

const engine::LocalPart* GrpcPeers::SamplingPart(int part) {
  return options_.peer_sampling == PeerSampling::kLocal ? Mapped(part) : nullptr;
}

const engine::LocalPart* GrpcPeers::Mapped(int part) {
  if (part < 0 || part == options_.self_part) return nullptr;
  absl::MutexLock lock(&map_mu_);
  if (std::ssize(mapping_) <= part) {
    mapping_.resize(part + 1, Mapping::kUndecided);
    mapped_.resize(part + 1);
  }
  if (mapping_[part] == Mapping::kUndecided) {
    absl::StatusOr<std::unique_ptr<engine::LocalPart>> mapped = MapIfSameHost(part);
    if (!mapped.ok()) return nullptr;  // not decided; the RPC reports why the peer is missing
    mapping_[part] = *mapped != nullptr ? Mapping::kMapped : Mapping::kRpc;
    mapped_[part] = *std::move(mapped);
  }
  return mapped_[part].get();
}

absl::StatusOr<GrpcPeers::BulkPeer> GrpcPeers::BulkAddress(int part) {
  ASSIGN_OR_RETURN(std::shared_ptr<Peer> peer, PeerFor(part));
  v1::Metadata meta;
  grpc::Status status =
      GetVerifiedMetadata(*peer->stub, options_.rpc.token, part, options_.rpc_timeout, &meta);
  if (!status.ok()) {
    // BulkPeers asks again after a failure: let that find a restarted peer or another replica.
    if (PeerLost(status)) Forget(part, peer->address, status.error_message());
    return Annotate(rpc::FromGrpcStatus(status), part, peer->address);
  }
  BulkPeer out{peer->address, "", !options_.host_id.empty() && meta.host_id() == options_.host_id};
  if (meta.bulk_port() > 0) {
    out.bulk_address =
        absl::StrCat(peer->address.substr(0, peer->address.rfind(':')), ":", meta.bulk_port());
  }
  return out;
}

absl::StatusOr<std::unique_ptr<engine::LocalPart>> GrpcPeers::MapIfSameHost(int part) {
  ASSIGN_OR_RETURN(std::shared_ptr<Peer> peer, PeerFor(part));
  v1::Metadata meta;
  grpc::Status status =
      GetVerifiedMetadata(*peer->stub, options_.rpc.token, part, options_.rpc_timeout, &meta);
  if (!status.ok()) return Annotate(rpc::FromGrpcStatus(status), part, peer->address);
  if (meta.host_id().empty() || meta.host_id() != options_.this_host_id || meta.part() != part) {
    return nullptr;  // another host: its files need not be here
  }
  auto loaded =
      common::PartitionPart::Load(options_.partition_dir, part, {.verify_checksums = false});
  if (!loaded.ok()) {
    std::fprintf(stderr,
                 "graphshard-server: part %d at %s is on this host, but its files do "
                 "not load here (%s); asking it instead\n",
                 part, peer->address.c_str(), std::string(loaded.status().message()).c_str());
    return nullptr;
  }
  if (!SameLayout(meta, (*loaded)->manifest())) {
    std::fprintf(stderr,
                 "graphshard-server: part %d at %s serves another partition layout than "
                 "%s; asking it instead\n",
                 part, peer->address.c_str(), options_.partition_dir.c_str());
    return nullptr;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<engine::LocalPart> local,
                   engine::LocalPart::Create(*std::move(loaded), options_.limits));
  std::fprintf(stderr,
               "graphshard-server: part %d at %s is on this host: reading its part from "
               "%s/part_%d (mmap) for %s\n",
               part, peer->address.c_str(), options_.partition_dir.c_str(), part,
               options_.peer_features != PeerFeatures::kLocal   ? "sampling"
               : options_.peer_sampling != PeerSampling::kLocal ? "feature rows"
                                                                : "feature rows and sampling");
  return local;
}

}  // namespace graphshard::server
