#include "server/bulk_peers.h"

#include <cstdio>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/transient_error.h"
#include "server/bulk_codec.h"
#include "transport/frame.h"

namespace graphshard::server {
namespace {

int64_t BodyBytes(const transport::Body& body) {
  int64_t n = 0;
  for (const absl::Span<const char>& a : body.Arrays()) n += static_cast<int64_t>(a.size());
  return n;
}

// Bytes of a frame on the wire: header, array table, arrays.
int64_t FrameBytes(size_t arrays, int64_t array_bytes) {
  return static_cast<int64_t>(transport::kHeaderBytes + 8 * arrays) + array_bytes;
}
int64_t FrameBytes(const transport::Body& body) {
  return FrameBytes(body.Arrays().size(), BodyBytes(body));
}
int64_t FrameBytes(const transport::Received& r) {
  int64_t n = 0;
  for (const std::vector<char>& a : r.arrays) n += static_cast<int64_t>(a.size());
  return FrameBytes(r.arrays.size(), n);
}

}  // namespace

absl::StatusOr<BulkPeers::Route> BulkPeers::RouteFor(int part) {
  {
    absl::MutexLock lock(&mu_);
    auto it = routes_.find(part);
    if (it != routes_.end()) return it->second;
  }
  absl::StatusOr<GrpcPeers::BulkPeer> found = grpc_.BulkAddress(part);
  if (!found.ok()) return found.status();
  Route route{{found->bulk_address, absl::StrCat("part ", part)}, found->shm_answers};
  if (found->bulk_address.empty()) {
    std::fprintf(stderr,
                 "graphshard-server: part %d at %s publishes no bulk port: asking it over gRPC\n",
                 part, found->grpc_address.c_str());
  } else {
    std::fprintf(stderr,
                 "graphshard-server: part %d at %s: peer calls over the bulk transport at %s%s\n",
                 part, found->grpc_address.c_str(), found->bulk_address.c_str(),
                 found->shm_answers ? " (feature rows through shared memory: same host)" : "");
  }
  absl::MutexLock lock(&mu_);
  routes_[part] = route;
  return route;
}

void BulkPeers::Forget(int part, const absl::Status& why) {
  // After a transient failure (a closed or broken connection, a peer that stopped answering)
  // the part is looked up again: its metadata over gRPC, which names a lost peer once per outage.
  if (!common::IsTransientError(why)) return;
  absl::MutexLock lock(&mu_);
  routes_.erase(part);
}

void BulkPeers::SampleOneHop(int part, engine::OneHopRequest request,
                             Callback<std::vector<engine::HopResult>> done) {
  absl::StatusOr<Route> route = RouteFor(part);
  if (!route.ok()) {
    done(route.status());
    return;
  }
  if (route->endpoint.address.empty()) {
    grpc_.SampleOneHop(part, std::move(request), std::move(done));
    return;
  }
  const size_t items = request.items.size();
  std::unique_ptr<transport::Body> body = EncodeOneHopRequest(std::move(request));
  const int64_t sent = FrameBytes(*body);
  client_.Request(route->endpoint, kBulkSampleOneHop, std::move(body), absl::Now() + timeout_,
                  [this, part, items, sent, done = std::move(done)](
                      absl::StatusOr<transport::Received> answer) {
                    if (stats_ != nullptr) {
                      stats_->AddPeerTraffic(sent, answer.ok() ? FrameBytes(*answer) : 0, 0);
                    }
                    if (!answer.ok()) {
                      Forget(part, answer.status());
                      done(answer.status());
                      return;
                    }
                    done(engine::Answer<std::vector<engine::HopResult>>::Deferred(
                        [answer = *std::move(answer), items]() mutable {
                          return DecodeHopResults(std::move(answer), items);
                        }));
                  });
}

void BulkPeers::GatherFeatures(int part, std::vector<engine::TypedIds> items,
                               engine::FeatureDtype dtype,
                               Callback<std::vector<engine::FeatureBlock>> done) {
  absl::StatusOr<Route> route = RouteFor(part);
  if (!route.ok()) {
    done(route.status());
    return;
  }
  if (route->endpoint.address.empty() || route->gather_over_grpc) {
    grpc_.GatherFeatures(part, std::move(items), dtype, std::move(done));
    return;
  }
  std::vector<size_t> ids_per_item;
  ids_per_item.reserve(items.size());
  for (const engine::TypedIds& t : items) ids_per_item.push_back(t.ids.size());
  std::unique_ptr<transport::Body> body = EncodeGatherRequest(std::move(items), dtype);
  const int64_t sent = FrameBytes(*body);
  client_.Request(route->endpoint, kBulkGatherFeatures, std::move(body), absl::Now() + timeout_,
                  [this, part, dtype, sent, ids_per_item = std::move(ids_per_item),
                   done = std::move(done)](absl::StatusOr<transport::Received> answer) {
                    if (stats_ != nullptr) {
                      stats_->AddPeerTraffic(sent, answer.ok() ? FrameBytes(*answer) : 0, 0);
                    }
                    if (!answer.ok()) {
                      Forget(part, answer.status());
                      done(answer.status());
                      return;
                    }
                    done(engine::Answer<std::vector<engine::FeatureBlock>>::Deferred(
                        [answer = *std::move(answer), ids_per_item, dtype]() mutable {
                          return DecodeFeatureBlocks(std::move(answer), ids_per_item, dtype);
                        }));
                  });
}

std::map<uint16_t, transport::Handler> BulkHandlers(const engine::LocalPart& local,
                                                    ServerStats& stats) {
  std::map<uint16_t, transport::Handler> handlers;
  handlers[kBulkSampleOneHop] = [&local, &stats](transport::Received request,
                                                 transport::Reply reply) {
    CallTimer timer(stats, "bulk/SampleOneHop");
    std::unique_ptr<transport::Body> body;
    try {
      absl::StatusOr<engine::OneHopRequest> req = DecodeOneHopRequest(std::move(request));
      absl::Status checked = req.ok() ? local.CheckHopCost(*req) : req.status();
      absl::StatusOr<std::vector<engine::HopResult>> result =
          checked.ok() ? local.SampleOneHop(*req) : checked;
      timer.set_ok(result.ok());
      if (!result.ok()) {
        reply(result.status());
        return;
      }
      body = EncodeHopResults(*std::move(result));
    } catch (const std::bad_alloc&) {
      timer.set_ok(false);
      reply(absl::ResourceExhaustedError("the server ran out of memory sampling a hop"));
      return;
    }
    stats.AddBytesSent(BodyBytes(*body));
    reply(std::move(body));
  };
  handlers[kBulkGatherFeatures] = [&local, &stats](transport::Received request,
                                                   transport::Reply reply) {
    CallTimer timer(stats, "bulk/GatherFeatures");
    std::unique_ptr<transport::Body> body;
    try {
      absl::StatusOr<GatherRequest> req = DecodeGatherRequest(std::move(request));
      absl::StatusOr<std::vector<engine::FeatureBlock>> blocks =
          req.ok() ? local.GatherFeatures(req->items, req->dtype) : req.status();
      timer.set_ok(blocks.ok());
      if (!blocks.ok()) {
        reply(blocks.status());
        return;
      }
      body = EncodeFeatureBlocks(*std::move(blocks));
    } catch (const std::bad_alloc&) {
      timer.set_ok(false);
      reply(absl::ResourceExhaustedError("the server ran out of memory gathering features"));
      return;
    }
    stats.AddBytesSent(BodyBytes(*body));
    reply(std::move(body));
  };
  return handlers;
}

}  // namespace graphshard::server
