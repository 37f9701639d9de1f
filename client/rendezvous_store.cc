#include "client/rendezvous_store.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "proto/rendezvous_store.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/status.h"

namespace graphshard::client {

namespace pb = ::graphshard::rendezvous::v1;

namespace {

// A waiting call's answer comes from the store (naming the key) before the call's own deadline:
// the client's deadline is the wait plus this, and the store stops waiting this much before the
// call's deadline.
constexpr absl::Duration kWaitMargin = absl::Seconds(2);
// Ranks that find no store yet ask again after this (each attempt waits for a connection).
constexpr absl::Duration kConnectAttempt = absl::Seconds(2);

// The store's deadline for a waiting call: `wait_ms` (<= 0: none given) and the call's deadline.
absl::Time WaitDeadline(int64_t wait_ms, const grpc::ServerContext& ctx) {
  const absl::Time call = absl::FromChrono(ctx.deadline()) - kWaitMargin / 4;
  if (wait_ms <= 0) return call;
  return std::min(absl::Now() + absl::Milliseconds(wait_ms), call);
}

std::vector<std::string> Keys(const google::protobuf::RepeatedPtrField<std::string>& keys) {
  return std::vector<std::string>(keys.begin(), keys.end());
}

// Thin: proto -> StoreTable -> proto.
class StoreService final : public pb::RendezvousStore::Service {
 public:
  explicit StoreService(const StoreLimits& limits) : table_(limits) {}
  StoreTable& table() { return table_; }

  grpc::Status Set(grpc::ServerContext*, const pb::SetRequest* req, pb::SetResponse*) override {
    return rpc::ToGrpcStatus(table_.Set(req->key(), req->value()));
  }
  grpc::Status CompareSet(grpc::ServerContext*, const pb::CompareSetRequest* req,
                          pb::ValueResponse* resp) override {
    absl::StatusOr<std::string> v = table_.CompareSet(req->key(), req->expected(), req->desired());
    if (v.ok()) resp->set_value(*std::move(v));
    return rpc::ToGrpcStatus(v.status());
  }
  grpc::Status Get(grpc::ServerContext* ctx, const pb::GetRequest* req,
                   pb::ValueResponse* resp) override {
    absl::StatusOr<std::string> v = table_.Get(req->key(), WaitDeadline(req->wait_ms(), *ctx),
                                               [ctx] { return ctx->IsCancelled(); });
    if (v.ok()) resp->set_value(*std::move(v));
    return rpc::ToGrpcStatus(v.status());
  }
  grpc::Status Add(grpc::ServerContext*, const pb::AddRequest* req,
                   pb::AddResponse* resp) override {
    absl::StatusOr<int64_t> v = table_.Add(req->key(), req->delta());
    if (v.ok()) resp->set_value(*v);
    return rpc::ToGrpcStatus(v.status());
  }
  grpc::Status Check(grpc::ServerContext*, const pb::KeysRequest* req,
                     pb::CheckResponse* resp) override {
    absl::StatusOr<bool> v = table_.Check(Keys(req->keys()));
    if (v.ok()) resp->set_all_set(*v);
    return rpc::ToGrpcStatus(v.status());
  }
  grpc::Status Wait(grpc::ServerContext* ctx, const pb::WaitRequest* req,
                    pb::WaitResponse*) override {
    return rpc::ToGrpcStatus(table_.Wait(Keys(req->keys()), WaitDeadline(req->wait_ms(), *ctx),
                                         [ctx] { return ctx->IsCancelled(); }));
  }
  grpc::Status Delete(grpc::ServerContext*, const pb::DeleteRequest* req,
                      pb::DeleteResponse* resp) override {
    resp->set_deleted(table_.Delete(req->key()));
    return grpc::Status::OK;
  }
  grpc::Status NumKeys(grpc::ServerContext*, const pb::NumKeysRequest*,
                       pb::NumKeysResponse* resp) override {
    resp->set_num_keys(table_.NumKeys());
    return grpc::Status::OK;
  }

 private:
  StoreTable table_;
};

std::string ShowKey(const std::string& key) {
  return absl::StrCat("'", absl::CHexEscape(key), "'");
}

class StoreClient final : public KeyValueStore {
 public:
  StoreClient(std::string address, const rpc::RpcOptions& rpc, absl::Duration timeout)
      : address_(std::move(address)),
        timeout_(timeout),
        stub_(pb::RendezvousStore::NewStub(rpc::MakeChannel(address_, rpc))) {}

  absl::Duration timeout() const override { return timeout_; }

  absl::Status Set(const std::string& key, const std::string& value) override {
    return SetBy(key, value, absl::Now() + timeout_, false);
  }
  // `connecting`: the call waits for a connection up to its deadline (see Call).
  absl::Status SetBy(const std::string& key, const std::string& value, absl::Time deadline,
                     bool connecting) {
    pb::SetRequest req;
    req.set_key(key);
    req.set_value(value);
    pb::SetResponse resp;
    return Call(
        absl::StrCat("set ", ShowKey(key)), deadline,
        [&](grpc::ClientContext* c) { return stub_->Set(c, req, &resp); }, connecting);
  }
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration wait) override {
    pb::GetRequest req;
    req.set_key(key);
    req.set_wait_ms(WaitMs(wait));
    pb::ValueResponse resp;
    RETURN_IF_ERROR(Call(absl::StrCat("get ", ShowKey(key)), absl::Now() + wait + kWaitMargin,
                         [&](grpc::ClientContext* c) { return stub_->Get(c, req, &resp); }));
    return std::move(*resp.mutable_value());
  }
  absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) override {
    pb::CompareSetRequest req;
    req.set_key(key);
    req.set_expected(expected);
    req.set_desired(desired);
    pb::ValueResponse resp;
    RETURN_IF_ERROR(Call(absl::StrCat("compare-set ", ShowKey(key)), absl::Now() + timeout_,
                         [&](grpc::ClientContext* c) { return stub_->CompareSet(c, req, &resp); }));
    return std::move(*resp.mutable_value());
  }
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override {
    pb::AddRequest req;
    req.set_key(key);
    req.set_delta(delta);
    pb::AddResponse resp;
    RETURN_IF_ERROR(Call(absl::StrCat("add ", ShowKey(key)), absl::Now() + timeout_,
                         [&](grpc::ClientContext* c) { return stub_->Add(c, req, &resp); }));
    return resp.value();
  }
  absl::StatusOr<bool> Check(const std::vector<std::string>& keys) override {
    pb::KeysRequest req;
    for (const std::string& k : keys) req.add_keys(k);
    pb::CheckResponse resp;
    RETURN_IF_ERROR(Call(absl::StrCat("check ", Named(keys)), absl::Now() + timeout_,
                         [&](grpc::ClientContext* c) { return stub_->Check(c, req, &resp); }));
    return resp.all_set();
  }
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration wait) override {
    pb::WaitRequest req;
    for (const std::string& k : keys) req.add_keys(k);
    req.set_wait_ms(WaitMs(wait));
    pb::WaitResponse resp;
    return Call(absl::StrCat("wait for ", Named(keys)), absl::Now() + wait + kWaitMargin,
                [&](grpc::ClientContext* c) { return stub_->Wait(c, req, &resp); });
  }
  absl::StatusOr<bool> Delete(const std::string& key) override {
    pb::DeleteRequest req;
    req.set_key(key);
    pb::DeleteResponse resp;
    RETURN_IF_ERROR(Call(absl::StrCat("delete ", ShowKey(key)), absl::Now() + timeout_,
                         [&](grpc::ClientContext* c) { return stub_->Delete(c, req, &resp); }));
    return resp.deleted();
  }
  absl::StatusOr<int64_t> NumKeys() override { return NumKeysBy(absl::Now() + timeout_, false); }
  absl::StatusOr<int64_t> NumKeysBy(absl::Time deadline, bool connecting) {
    pb::NumKeysRequest req;
    pb::NumKeysResponse resp;
    RETURN_IF_ERROR(Call(
        "num-keys", deadline, [&](grpc::ClientContext* c) { return stub_->NumKeys(c, req, &resp); },
        connecting));
    return resp.num_keys();
  }

 private:
  static int64_t WaitMs(absl::Duration wait) {
    return std::max<int64_t>(1, absl::ToInt64Milliseconds(wait));
  }
  static std::string Named(const std::vector<std::string>& keys) {
    if (keys.size() == 1) return ShowKey(keys[0]);
    return absl::StrCat(keys.size(), " keys");
  }

  // One call with `deadline`; errors name the store and the call. Unless `connecting`, a store
  // that cannot be reached is UNAVAILABLE at once. With `connecting` the call waits for the
  // connection, and its thread drives the connection attempts meanwhile: gRPC 1.51 advances a
  // handshake only while some call polls the channel (else its backup poller, every 5 s), so
  // retrying calls that fail at once leaves a TLS handshake to time out (seen: rank 1 never met
  // rank 0 under --tls-mutual).
  template <typename F>
  absl::Status Call(const std::string& what, absl::Time deadline, F&& f, bool connecting = false) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(deadline));
    ctx.set_wait_for_ready(connecting);
    const grpc::Status s = f(&ctx);
    if (s.ok()) return absl::OkStatus();
    absl::Status status = rpc::FromGrpcStatus(s);
    std::string message(status.message());
    if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
        !absl::StrContains(message, "rendezvous store")) {
      message = "no answer in time (rank 0, which hosts the store, is stopped or unreachable?)";
    }
    return absl::Status(status.code(),
                        absl::StrCat("rendezvous store at ", address_, ": ", what, ": ", message));
  }

  const std::string address_;
  const absl::Duration timeout_;
  std::unique_ptr<pb::RendezvousStore::Stub> stub_;
};

// Rank 0's store: the server and a client of it (destroyed first).
class HostedStore final : public KeyValueStore {
 public:
  HostedStore(std::unique_ptr<RendezvousStoreServer> server, std::unique_ptr<KeyValueStore> client)
      : server_(std::move(server)), client_(std::move(client)) {}
  absl::Duration timeout() const override { return client_->timeout(); }
  absl::Status Set(const std::string& key, const std::string& value) override {
    return client_->Set(key, value);
  }
  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration wait) override {
    return client_->Get(key, wait);
  }
  absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) override {
    return client_->CompareSet(key, expected, desired);
  }
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override {
    return client_->Add(key, delta);
  }
  absl::StatusOr<bool> Check(const std::vector<std::string>& keys) override {
    return client_->Check(keys);
  }
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration wait) override {
    return client_->Wait(keys, wait);
  }
  absl::StatusOr<bool> Delete(const std::string& key) override { return client_->Delete(key); }
  absl::StatusOr<int64_t> NumKeys() override { return client_->NumKeys(); }

 private:
  std::unique_ptr<RendezvousStoreServer> server_;
  std::unique_ptr<KeyValueStore> client_;
};

std::string RankKey(int rank) { return absl::StrCat("graphshard/rendezvous/rank/", rank); }

}  // namespace

class RendezvousStoreServer::Impl {
 public:
  explicit Impl(const StoreLimits& limits) : service(limits) {}
  StoreService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

RendezvousStoreServer::RendezvousStoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RendezvousStoreServer::~RendezvousStoreServer() {
  impl_->service.table().Close();  // waiting calls end now
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

int RendezvousStoreServer::port() const { return impl_->port; }

std::string JoinHostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && (host.empty() || host.front() != '[')) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<std::unique_ptr<RendezvousStoreServer>> RendezvousStoreServer::Start(
    const std::string& host, int port, const rpc::RpcOptions& rpc, const StoreLimits& limits) {
  const std::string listen = JoinHostPort(host, port);
  if (rpc.credentials == rpc::CredentialsKind::kTls &&
      (rpc.tls.cert_pem.empty() || rpc.tls.key_pem.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank 0 serves the rendezvous store at ", listen,
        " (MASTER_ADDR:MASTER_PORT): under TLS (--tls-ca) it needs --tls-cert and --tls-key"));
  }
  auto impl = std::make_unique<Impl>(limits);
  rpc::RpcOptions options = rpc;
  // What one message may carry: a value or a list of keys, well below gRPC's 1 GiB here.
  options.max_message_bytes = static_cast<int>(
      std::min<int64_t>(rpc::kMaxMessageBytes, limits.max_value_bytes + (1 << 20)));
  grpc::ServerBuilder builder;
  rpc::ConfigureServerBuilder(builder, listen, options, &impl->port);
  // Another process of this user must not share the port (gRPC sets SO_REUSEPORT by default).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(&impl->service);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    if (impl->server != nullptr) impl->server->Shutdown();
    return absl::UnavailableError(absl::StrCat(
        "cannot serve the rendezvous store on ", listen,
        " (MASTER_ADDR:MASTER_PORT): the port is in use, or MASTER_ADDR is not an address of "
        "this host (rank 0 must run there)"));
  }
  return std::unique_ptr<RendezvousStoreServer>(new RendezvousStoreServer(std::move(impl)));
}

std::unique_ptr<KeyValueStore> MakeRendezvousStoreClient(const std::string& address,
                                                         const rpc::RpcOptions& rpc,
                                                         absl::Duration timeout) {
  return std::make_unique<StoreClient>(address, rpc, timeout);
}

absl::StatusOr<std::unique_ptr<KeyValueStore>> CreateRendezvousStore(const RendezvousConfig& config,
                                                                     const rpc::RpcOptions& rpc,
                                                                     double timeout_s) {
  const std::string where = JoinHostPort(config.master_addr, config.master_port);
  const absl::Duration timeout = absl::Seconds(timeout_s);
  const absl::Time deadline = absl::Now() + timeout;
  auto failed = [&](const absl::Status& s) {
    return absl::Status(
        s.code(),
        absl::StrCat("rendezvous of rank ", config.rank, " of ", config.world_size, " at ", where,
                     " (MASTER_ADDR:MASTER_PORT) failed within ", timeout_s, "s: ", s.message()));
  };
  std::unique_ptr<RendezvousStoreServer> server;
  if (config.rank == 0) {
    absl::StatusOr<std::unique_ptr<RendezvousStoreServer>> started =
        RendezvousStoreServer::Start(config.master_addr, config.master_port, rpc);
    if (!started.ok()) return failed(started.status());
    server = *std::move(started);
  }
  auto client = std::make_unique<StoreClient>(where, rpc, timeout);
  // Check in; rank 0's store may not be up yet: short attempts that wait for a connection, until
  // the deadline.
  absl::Status in;
  do {
    in = client->SetBy(RankKey(config.rank), "joined",
                       std::min(deadline, absl::Now() + kConnectAttempt), true);
  } while ((absl::IsUnavailable(in) || absl::IsDeadlineExceeded(in)) && absl::Now() < deadline);
  if (absl::IsDeadlineExceeded(in)) {
    // Why no connection came: a call that does not wait reports the channel's last error
    // (refused, TLS handshake, ...).
    absl::Status why =
        client->SetBy(RankKey(config.rank), "joined", absl::Now() + absl::Seconds(1), false);
    if (why.ok() || absl::IsUnavailable(why)) in = why;
  }
  if (!in.ok()) return failed(in);
  if (server == nullptr) return std::unique_ptr<KeyValueStore>(std::move(client));
  std::vector<std::string> everyone;
  for (int r = 0; r < config.world_size; ++r) everyone.push_back(RankKey(r));
  if (absl::Status all =
          client->Wait(everyone, std::max(deadline - absl::Now(), absl::ZeroDuration()));
      !all.ok()) {
    return failed(
        absl::Status(all.code(), absl::StrCat("not every rank checked in (", all.message(), ")")));
  }
  return std::unique_ptr<KeyValueStore>(new HostedStore(std::move(server), std::move(client)));
}

absl::StatusOr<std::unique_ptr<KeyValueStore>> ConnectRendezvousStore(
    const RendezvousConfig& config, const rpc::RpcOptions& rpc, double timeout_s) {
  const std::string where = JoinHostPort(config.master_addr, config.master_port);
  auto client = std::make_unique<StoreClient>(where, rpc, absl::Seconds(timeout_s));
  if (absl::StatusOr<int64_t> n = client->NumKeysBy(absl::Now() + absl::Seconds(timeout_s), true);
      !n.ok()) {
    return absl::Status(n.status().code(), absl::StrCat("connecting to the rendezvous store at ",
                                                        where, ": ", n.status().message()));
  }
  return std::unique_ptr<KeyValueStore>(std::move(client));
}

}  // namespace graphshard::client
