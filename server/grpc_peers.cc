#include "server/grpc_peers.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "common/registry.h"
#include "server/grpc_options.h"
#include "server/proto_convert.h"

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

// Issues `method` asynchronously and converts the answer with FromProto.
template <typename Result, typename Req, typename Resp, typename Method>
void Issue(v1::PartitionService::Stub* stub, const std::string& address, int part, Req request,
           absl::Duration timeout, Method method, engine::Peers::Callback<Result> done) {
  auto call = std::make_shared<Call<Req, Resp>>();
  call->request = std::move(request);
  call->context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  (stub->async()->*method)(
      &call->context, &call->request, &call->response,
      [call, done = std::move(done), address, part](grpc::Status status) {
        if (!status.ok()) {
          done(Annotate(FromGrpcStatus(status), part, address));
          return;
        }
        absl::StatusOr<Result> result = FromProto(call->response);
        if (!result.ok()) {
          done(Annotate(result.status(), part, address));
          return;
        }
        done(std::move(result));
      });
}

}  // namespace

absl::StatusOr<GrpcPeers::Peer*> GrpcPeers::PeerFor(int part) {
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(peers_.size()) <= part) peers_.resize(part + 1);
  if (peers_[part] != nullptr) return peers_[part].get();
  std::string address;
  if (!options_.addresses.empty()) {
    if (part >= static_cast<int>(options_.addresses.size())) {
      return absl::UnavailableError(absl::StrCat("part ", part, " is not in --servers (",
                                                 options_.addresses.size(), " addresses)"));
    }
    address = options_.addresses[part];
  } else if (!options_.registry_dir.empty()) {
    absl::StatusOr<std::string> found = common::LookupAddress(options_.registry_dir, part);
    if (!found.ok()) return absl::UnavailableError(found.status().message());
    address = *found;
  } else {
    return absl::UnavailableError(absl::StrCat(
        "part ", part, " is remote, and neither --servers nor --registry was given"));
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  auto peer = std::make_unique<Peer>();
  peer->address = address;
  peer->stub = v1::PartitionService::NewStub(channel);
  peers_[part] = std::move(peer);
  return peers_[part].get();
}

void GrpcPeers::SampleOneHop(int part, engine::OneHopRequest request,
                             Callback<std::vector<engine::HopResult>> done) {
  absl::StatusOr<Peer*> peer = PeerFor(part);
  if (!peer.ok()) {
    done(peer.status());
    return;
  }
  using Async = v1::PartitionService::Stub::async_interface;
  Issue<std::vector<engine::HopResult>, v1::SampleOneHopRequest, v1::SampleOneHopResponse>(
      (*peer)->stub.get(), (*peer)->address, part, ToProto(request), options_.rpc_timeout,
      static_cast<void (Async::*)(grpc::ClientContext*, const v1::SampleOneHopRequest*,
                                  v1::SampleOneHopResponse*, std::function<void(grpc::Status)>)>(
          &Async::SampleOneHop),
      std::move(done));
}

void GrpcPeers::GatherFeatures(int part, std::vector<engine::TypedIds> items,
                               engine::FeatureDtype dtype,
                               Callback<std::vector<engine::FeatureBlock>> done) {
  absl::StatusOr<Peer*> peer = PeerFor(part);
  if (!peer.ok()) {
    done(peer.status());
    return;
  }
  v1::GatherFeaturesRequest request = ToProto(items, dtype, options_.host_id);
  using Async = v1::PartitionService::Stub::async_interface;
  Issue<std::vector<engine::FeatureBlock>, v1::GatherFeaturesRequest, v1::GatherFeaturesResponse>(
      (*peer)->stub.get(), (*peer)->address, part, std::move(request), options_.rpc_timeout,
      static_cast<void (Async::*)(grpc::ClientContext*, const v1::GatherFeaturesRequest*,
                                  v1::GatherFeaturesResponse*, std::function<void(grpc::Status)>)>(
          &Async::GatherFeatures),
      std::move(done));
}

}  // namespace graphshard::server
