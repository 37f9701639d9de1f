// The job token and TLS on real partition servers (in-process, port 0): every RPC of every
// service is refused without the token, the bulk port refuses a peer without it, and batches
// stream end to end with the token, over plaintext and over TLS (servers asking their peers
// with the token too). docs/SECURITY.md.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/secret.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "rpc/health.h"
#include "rpc/security.h"
#include "server/proto_convert.h"
#include "tests/server/test_cluster.h"
#include "tests/testing/source_paths.h"
#include "transport/asio_transport.h"
#include "transport/frame.h"

namespace graphshard::server {
namespace {

using testing::Context;

constexpr char kToken[] = "server-test-token-0123456789abcdef";

rpc::RpcOptions Token(const std::string& token) {
  rpc::RpcOptions o;
  o.token = token;
  return o;
}

std::unique_ptr<v1::PartitionService::Stub> Stub(const std::string& address,
                                                 const rpc::RpcOptions& options) {
  return v1::PartitionService::NewStub(rpc::MakeChannel(address, options));
}

grpc::StatusCode GetMetadata(const std::string& address, const rpc::RpcOptions& options) {
  v1::GetMetadataRequest req;
  v1::Metadata resp;
  return Stub(address, options)->GetMetadata(Context().get(), req, &resp).error_code();
}

grpc::StatusCode Stats(const std::string& address, const rpc::RpcOptions& options) {
  v1::GetStatsRequest req;
  v1::Stats resp;
  return Stub(address, options)->GetStats(Context().get(), req, &resp).error_code();
}

grpc::StatusCode Reflection(const std::string& address, const rpc::RpcOptions& options) {
  auto stub =
      grpc::reflection::v1alpha::ServerReflection::NewStub(rpc::MakeChannel(address, options));
  auto ctx = Context();
  auto stream = stub->ServerReflectionInfo(ctx.get());
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  stream->Write(req);
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  const bool got = stream->Read(&resp);
  const grpc::Status s = stream->Finish();
  return s.ok() && !got ? grpc::StatusCode::UNKNOWN : s.error_code();
}

// Streams part `part`'s training seeds, fanouts [5, 3]; the number of batches or the status.
absl::StatusOr<int> StreamTrainSplit(const std::string& address, const rpc::RpcOptions& options) {
  auto stub = Stub(address, options);
  v1::GetSplitRequest split_req;
  split_req.set_split("train");
  v1::GetSplitResponse split;
  grpc::Status s = stub->GetSplit(Context().get(), split_req, &split);
  if (!s.ok()) return absl::UnknownError(absl::StrCat(s.error_code(), ": ", s.error_message()));
  v1::StreamBatchesRequest req;
  req.set_seeds(split.ids());
  req.set_batch_size(64);
  req.mutable_sampling()->add_fanouts(5);
  req.mutable_sampling()->add_fanouts(3);
  auto ctx = Context();
  auto reader = stub->StreamBatches(ctx.get(), req);
  int n = 0;
  v1::Minibatch m;
  while (reader->Read(&m)) ++n;
  s = reader->Finish();
  if (!s.ok()) return absl::UnknownError(absl::StrCat(s.error_code(), ": ", s.error_message()));
  return n;
}

// Two parts with the token; peers on "other hosts" (every remote hop crosses the bulk port).
class TokenClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graph_ = new partitioner::Graph(testing::ReadCora());
    cluster_ = new testing::TestCluster(*graph_, 2, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc,
                                        [](ServerOptions& o) {
                                          o.rpc = Token(kToken);
                                          o.isolated_peers = true;
                                          o.metrics_listen = "127.0.0.1:0";
                                        });
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete graph_;
  }
  static std::string Address(int p) { return cluster_->server(p).address(); }
  static partitioner::Graph* graph_;
  static testing::TestCluster* cluster_;
};
partitioner::Graph* TokenClusterTest::graph_ = nullptr;
testing::TestCluster* TokenClusterTest::cluster_ = nullptr;

TEST_F(TokenClusterTest, EveryRpcIsRefusedWithoutTheToken) {
  for (const std::string& token :
       {std::string(), std::string("server-test-token-0123456789abcdeX")}) {
    EXPECT_EQ(GetMetadata(Address(0), Token(token)), grpc::StatusCode::UNAUTHENTICATED) << token;
    EXPECT_EQ(Stats(Address(0), Token(token)), grpc::StatusCode::UNAUTHENTICATED) << token;
    EXPECT_EQ(Reflection(Address(0), Token(token)), grpc::StatusCode::UNAUTHENTICATED) << token;
    const absl::Status health = rpc::CheckHealth(rpc::MakeChannel(Address(0), Token(token)),
                                                 absl::Now() + absl::Seconds(10));
    EXPECT_TRUE(absl::IsUnauthenticated(health)) << health;
    const absl::StatusOr<int> stream = StreamTrainSplit(Address(0), Token(token));
    EXPECT_FALSE(stream.ok());
  }
}

TEST_F(TokenClusterTest, StatsReflectionAndBatchesWithTheToken) {
  EXPECT_EQ(Stats(Address(0), Token(kToken)), grpc::StatusCode::OK);
  EXPECT_EQ(Reflection(Address(0), Token(kToken)), grpc::StatusCode::OK);
  // Every hop's remote half goes to the peer's bulk port, which wants the token too.
  for (int p = 0; p < 2; ++p) {
    const absl::StatusOr<int> batches = StreamTrainSplit(Address(p), Token(kToken));
    ASSERT_TRUE(batches.ok()) << batches.status();
    EXPECT_GT(*batches, 0);
  }
}

TEST_F(TokenClusterTest, BulkPortRefusesAPeerWithoutTheToken) {
  v1::GetMetadataRequest req;
  v1::Metadata meta;
  ASSERT_TRUE(Stub(Address(1), Token(kToken))->GetMetadata(Context().get(), req, &meta).ok());
  ASSERT_GT(meta.bulk_port(), 0);
  const std::string bulk =
      absl::StrCat(Address(1).substr(0, Address(1).rfind(':')), ":", meta.bulk_port());
  for (const std::string& token : {std::string(), std::string("not-the-job-token-0123456789")}) {
    transport::AsioOptions options;
    options.token = token;
    transport::AsioClient client(options);
    std::promise<absl::StatusOr<transport::Received>> answer;
    // Kind 1 with no arrays: whatever it is, it must not be served.
    client.Request(transport::Endpoint{bulk, "part 1"}, 1, nullptr, absl::Now() + absl::Seconds(10),
                   [&](absl::StatusOr<transport::Received> r) { answer.set_value(std::move(r)); });
    auto f = answer.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    const absl::StatusOr<transport::Received> r = f.get();
    EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << "token '" << token << "': " << r.status();
  }
}

// A registry entry that is not the job's server: a gRPC service that records the authorization
// metadata a client sends it, and refuses the call.
class RecordingService final : public v1::PartitionService::Service {
 public:
  grpc::Status GetMetadata(grpc::ServerContext* ctx, const v1::GetMetadataRequest* /*req*/,
                           v1::Metadata* /*resp*/) override {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, value] : ctx->client_metadata()) {
      if (key == rpc::kTokenMetadataKey) seen_ = std::string(value.data(), value.size());
    }
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "a fake");
  }
  std::string seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  absl::Mutex mu_;
  std::string seen_ ABSL_GUARDED_BY(mu_);
};

// GetMetadata on the real server with this authorization value set by hand (no interceptor).
grpc::StatusCode GetMetadataAs(const std::string& address, const std::string& authorization) {
  auto ctx = Context();
  ctx->AddMetadata(rpc::kTokenMetadataKey, authorization);
  v1::GetMetadataRequest req;
  v1::Metadata resp;
  return Stub(address, {})->GetMetadata(ctx.get(), req, &resp).error_code();
}

TEST_F(TokenClusterTest, AFakeEntryLearnsNothingItCanUseAtTheRealServer) {
  RecordingService fake;
  grpc::ServerBuilder builder;
  int fake_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &fake_port);
  builder.RegisterService(&fake);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_GT(fake_port, 0);
  const std::string fake_address = absl::StrCat("127.0.0.1:", fake_port);
  EXPECT_EQ(GetMetadata(fake_address, Token(kToken)), grpc::StatusCode::UNAVAILABLE);
  const std::string seen = fake.seen();
  ASSERT_FALSE(seen.empty()) << "the client sent no credential at all";
  EXPECT_EQ(seen.find(kToken), std::string::npos) << "the fake received the job token: " << seen;
  EXPECT_EQ(seen, absl::StrCat("Bearer ", common::AddressCredential(kToken, fake_address)));
  // What the fake got is refused by the job's server; its own address's credential, and the
  // token itself (an operator's grpcurl), are accepted.
  const int real_port = common::PortOfAddress(Address(0));
  EXPECT_EQ(GetMetadataAs(Address(0), seen), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(GetMetadataAs(Address(0),
                          absl::StrCat("Bearer ", common::AddressCredential(kToken, Address(0)))),
            grpc::StatusCode::OK);
  // A fake on another host at the real server's port number receives the credential for its own
  // host: refused here. The real server (bound to 127.0.0.1) accepts the other loopback names,
  // which clients of its host may dial.
  for (const char* other_host : {"10.99.0.1", "node-b", "[fd00::7]"}) {
    EXPECT_EQ(GetMetadataAs(
                  Address(0),
                  absl::StrCat("Bearer ", common::AddressCredential(
                                              kToken, absl::StrCat(other_host, ":", real_port)))),
              grpc::StatusCode::UNAUTHENTICATED)
        << other_host;
  }
  EXPECT_EQ(
      GetMetadataAs(Address(0),
                    absl::StrCat("Bearer ", common::AddressCredential(
                                                kToken, absl::StrCat("LocalHost:", real_port)))),
      grpc::StatusCode::OK);
  EXPECT_EQ(GetMetadataAs(Address(0), absl::StrCat("Bearer ", kToken)), grpc::StatusCode::OK);
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
}

// A TCP listener on 127.0.0.1:0 (its port in *port): the bytes one connection sends within
// `wait` (what a bulk client sends as its hello).
class ByteRecorder {
 public:
  ByteRecorder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::listen(fd_, 4) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~ByteRecorder() { ::close(fd_); }
  int port() const { return port_; }
  std::string Record(int seconds) {
    const int conn = ::accept(fd_, nullptr, nullptr);
    if (conn < 0) return "";
    timeval tv{.tv_sec = seconds, .tv_usec = 0};
    ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = ::recv(conn, buf, sizeof(buf), 0)) > 0;) {
      got.append(buf, static_cast<size_t>(n));
      if (got.size() >= transport::kHeaderBytes + 8 + 68) break;  // a whole hello
    }
    ::close(conn);
    return got;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Sends `bytes` to 127.0.0.1:port; true if the server closed the connection within 5 s (a
// refused hello), false if it kept it open (an accepted one, which gets no answer).
bool ClosedAfterSending(int port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  bool closed = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size())) {
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
    }
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  ::close(fd);
  return closed;
}

TEST_F(TokenClusterTest, ABulkHelloToAFakeCannotBeReplayedAtTheRealBulkPort) {
  v1::GetMetadataRequest req;
  v1::Metadata meta;
  ASSERT_TRUE(Stub(Address(1), Token(kToken))->GetMetadata(Context().get(), req, &meta).ok());
  ASSERT_GT(meta.bulk_port(), 0);
  ByteRecorder fake;
  ASSERT_GT(fake.port(), 0);
  std::future<std::string> recorded =
      std::async(std::launch::async, [&] { return fake.Record(3); });
  transport::AsioOptions options;
  options.token = kToken;
  {
    transport::AsioClient client(options);
    client.Request(transport::Endpoint{absl::StrCat("127.0.0.1:", fake.port()), "fake"}, 1, nullptr,
                   absl::Now() + absl::Seconds(2), [](absl::StatusOr<transport::Received>) {});
    ASSERT_EQ(recorded.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  }
  std::string hello = recorded.get();
  EXPECT_EQ(hello.find(kToken), std::string::npos) << "the fake received the job token";
  const std::string fake_credential =
      common::AddressCredential(kToken, absl::StrCat("127.0.0.1:", fake.port()));
  const size_t at = hello.find(fake_credential);
  ASSERT_NE(at, std::string::npos) << "no hello with the fake address's credential";
  hello.resize(at + fake_credential.size());  // the hello frame only
  EXPECT_TRUE(ClosedAfterSending(meta.bulk_port(), hello)) << "a replayed hello was accepted";
  // A fake on another host at the real bulk port's number: its credential is refused too.
  std::string other_host = hello;
  other_host.replace(
      at, fake_credential.size(),
      common::AddressCredential(kToken, absl::StrCat("10.99.0.1:", meta.bulk_port())));
  EXPECT_TRUE(ClosedAfterSending(meta.bulk_port(), other_host));
  // The same frame with the real address's credential (as long) is accepted: the test can fail.
  hello.replace(at, fake_credential.size(),
                common::AddressCredential(kToken, absl::StrCat("127.0.0.1:", meta.bulk_port())));
  EXPECT_FALSE(ClosedAfterSending(meta.bulk_port(), hello));
}

// One HTTP/1.1 GET of /metrics on 127.0.0.1:port with these extra header lines; the status line.
std::string HttpGet(int port, const std::string& headers) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "connect failed";
  }
  const std::string req = absl::StrCat("GET /metrics HTTP/1.1\r\nHost: t\r\n", headers, "\r\n");
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;)
    got.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return got.substr(0, got.find("\r\n"));
}

TEST_F(TokenClusterTest, MetricsEndpointNeedsTheTokenToo) {
  const int port = cluster_->server(0).metrics_port();
  ASSERT_GT(port, 0);
  EXPECT_EQ(HttpGet(port, ""), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(HttpGet(port, "Authorization: Bearer server-test-token-0123456789abcdeX\r\n"),
            "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(HttpGet(port, absl::StrCat("Authorization: Bearer ", kToken, "\r\n")),
            "HTTP/1.1 200 OK");
}

// The same over TLS (certificates from deploy/graphshard-certs): servers ask their peers over
// gRPC with TLS and the token (no bulk port under TLS: it has no TLS).
class TlsClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new std::string(testing::MakeTempDir());
    const std::string cmd = absl::StrCat(testing::SourceDir(), "/deploy/graphshard-certs --out ",
                                         *certs_, "/tls >/dev/null");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    rpc::SecurityFlags f;
    f.tls_ca = *certs_ + "/tls/ca.pem";
    f.tls_cert = *certs_ + "/tls/node.pem";
    f.tls_key = *certs_ + "/tls/node.key";
    f.tls_server_name = "graphshard-server";
    server_rpc_ = new rpc::RpcOptions();
    ASSERT_TRUE(rpc::ApplySecurityFlags(f, rpc::Role::kServer, server_rpc_).ok());
    server_rpc_->token = kToken;
    graph_ = new partitioner::Graph(testing::ReadCora());
    cluster_ = new testing::TestCluster(*graph_, 2, {}, {}, PeerFeatures::kRpc, PeerSampling::kRpc,
                                        [](ServerOptions& o) {
                                          o.rpc = *server_rpc_;
                                          o.isolated_peers = true;
                                          o.bulk_port = -1;
                                          o.peer_transport = PeerTransport::kGrpc;
                                        });
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete graph_;
    delete server_rpc_;
    std::filesystem::remove_all(*certs_);
    delete certs_;
  }
  static rpc::RpcOptions Client(const std::string& token) {
    rpc::RpcOptions o = *server_rpc_;
    o.tls.cert_pem.clear();
    o.tls.key_pem.clear();
    o.token = token;
    return o;
  }
  static std::string* certs_;
  static rpc::RpcOptions* server_rpc_;
  static partitioner::Graph* graph_;
  static testing::TestCluster* cluster_;
};
std::string* TlsClusterTest::certs_ = nullptr;
rpc::RpcOptions* TlsClusterTest::server_rpc_ = nullptr;
partitioner::Graph* TlsClusterTest::graph_ = nullptr;
testing::TestCluster* TlsClusterTest::cluster_ = nullptr;

TEST_F(TlsClusterTest, BatchesStreamOverTlsWithTheToken) {
  for (int p = 0; p < 2; ++p) {
    const absl::StatusOr<int> batches =
        StreamTrainSplit(cluster_->server(p).address(), Client(kToken));
    ASSERT_TRUE(batches.ok()) << batches.status();
    EXPECT_GT(*batches, 0);
  }
}

TEST_F(TlsClusterTest, PlaintextAndTokenlessClientsAreRefused) {
  const std::string address = cluster_->server(0).address();
  EXPECT_EQ(GetMetadata(address, Token(kToken)), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(GetMetadata(address, Client("")), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Stats(address, Client("")), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Reflection(address, Client("")), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(GetMetadata(address, Client(kToken)), grpc::StatusCode::OK);
}

}  // namespace
}  // namespace graphshard::server
