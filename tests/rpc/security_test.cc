// The job token and TLS of rpc/channel.h against real gRPC servers on port 0: every service
// (health, reflection, ours) refuses a call without the token or with a wrong one; a plaintext
// client cannot talk to a TLS server; TLS with the token works. Certificates come from
// deploy/graphshard-certs, the script the launcher uses.
#include "rpc/security.h"

#include <gmock/gmock.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/secret.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "proto/graphshard.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/health.h"
#include "tests/testing/source_paths.h"

namespace graphshard::rpc {
namespace {

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";

class Server {
 public:
  explicit Server(const RpcOptions& options) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    grpc::ServerBuilder builder;
    ConfigureServerBuilder(builder, "127.0.0.1:0", options, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~Server() { server_->Shutdown(); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  int port() const { return port_; }

 private:
  int port_ = 0;
  v1::PartitionService::Service service_;  // every method UNIMPLEMENTED (once let in)
  std::unique_ptr<grpc::Server> server_;
};

absl::Status Health(const std::string& address, const RpcOptions& options) {
  return CheckHealth(MakeChannel(address, options), absl::Now() + absl::Seconds(10),
                     HealthCheckOptions{.wait_for_ready = false});
}

grpc::StatusCode ListServices(const std::string& address, const RpcOptions& options) {
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(MakeChannel(address, options));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  stream->Write(req);
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  const bool got = stream->Read(&resp);
  const grpc::Status status = stream->Finish();
  if (status.ok() && !got) return grpc::StatusCode::UNKNOWN;
  return status.error_code();
}

grpc::StatusCode Stats(const std::string& address, const RpcOptions& options) {
  auto stub = v1::PartitionService::NewStub(MakeChannel(address, options));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetStatsRequest req;
  v1::Stats resp;
  return stub->GetStats(&ctx, req, &resp).error_code();
}

RpcOptions WithToken(std::string token) {
  RpcOptions o;
  o.token = std::move(token);
  return o;
}

TEST(TokenTest, EveryServiceRefusesACallWithoutTheToken) {
  Server server(WithToken(kToken));
  ASSERT_GT(server.port(), 0);
  const absl::Status health = Health(server.address(), RpcOptions{});
  EXPECT_TRUE(absl::IsUnauthenticated(health)) << health;
  EXPECT_EQ(ListServices(server.address(), RpcOptions{}), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Stats(server.address(), RpcOptions{}), grpc::StatusCode::UNAUTHENTICATED);
}

TEST(TokenTest, EveryServiceRefusesAWrongToken) {
  Server server(WithToken(kToken));
  for (const std::string& wrong : {std::string("0123456789abcdef0123456789abcdeX"),
                                   std::string("0123456789abcdef"), absl::StrCat(kToken, "0")}) {
    const absl::Status health = Health(server.address(), WithToken(wrong));
    EXPECT_TRUE(absl::IsUnauthenticated(health)) << wrong << ": " << health;
    EXPECT_EQ(ListServices(server.address(), WithToken(wrong)), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(Stats(server.address(), WithToken(wrong)), grpc::StatusCode::UNAUTHENTICATED);
  }
}

TEST(TokenTest, TheRightTokenReachesEveryService) {
  Server server(WithToken(kToken));
  const absl::Status health = Health(server.address(), WithToken(kToken));
  EXPECT_TRUE(health.ok()) << health;
  EXPECT_EQ(ListServices(server.address(), WithToken(kToken)), grpc::StatusCode::OK);
  // Let in: the (empty) service answers for itself.
  EXPECT_EQ(Stats(server.address(), WithToken(kToken)), grpc::StatusCode::UNIMPLEMENTED);
}

TEST(TokenTest, NoTokenOnEitherSideKeepsTheOldBehaviour) {
  Server server(RpcOptions{});
  EXPECT_TRUE(Health(server.address(), RpcOptions{}).ok());
  EXPECT_EQ(ListServices(server.address(), RpcOptions{}), grpc::StatusCode::OK);
}

// The TLS material of one job, made by deploy/graphshard-certs.
class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (std::filesystem::temp_directory_path() / absl::StrCat("gs_tls_", ::getpid())).string());
    const std::string cmd =
        absl::StrCat(testing::SourceDir(), "/deploy/graphshard-certs --out ", *dir_, " >/dev/null");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static SecurityFlags Flags(bool mutual) {
    SecurityFlags f;
    f.tls_ca = *dir_ + "/ca.pem";
    f.tls_cert = *dir_ + "/node.pem";
    f.tls_key = *dir_ + "/node.key";
    f.tls_mutual = mutual;
    f.tls_server_name = "graphshard-server";
    return f;
  }
  static RpcOptions Options(Role role, bool mutual, const std::string& token) {
    RpcOptions o;
    SecurityFlags f = Flags(mutual);
    if (role == Role::kClient && !mutual) f.tls_cert = f.tls_key = "";
    const absl::Status s = ApplySecurityFlags(f, role, &o);
    EXPECT_TRUE(s.ok()) << s;
    o.token = token;
    return o;
  }
  static std::string* dir_;
};
std::string* TlsTest::dir_ = nullptr;

TEST_F(TlsTest, TlsWithTheTokenWorks) {
  Server server(Options(Role::kServer, false, kToken));
  const absl::Status health = Health(server.address(), Options(Role::kClient, false, kToken));
  EXPECT_TRUE(health.ok()) << health;
  EXPECT_EQ(ListServices(server.address(), Options(Role::kClient, false, kToken)),
            grpc::StatusCode::OK);
}

TEST_F(TlsTest, PlaintextClientIsRefusedByATlsServer) {
  Server server(Options(Role::kServer, false, kToken));
  const absl::Status health = Health(server.address(), WithToken(kToken));
  EXPECT_TRUE(absl::IsUnavailable(health)) << health;
  EXPECT_EQ(Stats(server.address(), WithToken(kToken)), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, TlsWithoutTheTokenIsRefused) {
  Server server(Options(Role::kServer, false, kToken));
  const absl::Status health = Health(server.address(), Options(Role::kClient, false, ""));
  EXPECT_TRUE(absl::IsUnauthenticated(health)) << health;
}

TEST_F(TlsTest, ClientRefusesAServerOfAnotherCa) {
  Server server(Options(Role::kServer, false, kToken));
  // Another job's CA: the server's certificate does not verify.
  const std::string other = *dir_ + "_other";
  ASSERT_EQ(std::system(absl::StrCat(testing::SourceDir(), "/deploy/graphshard-certs --out ", other,
                                     " >/dev/null")
                            .c_str()),
            0);
  SecurityFlags f;
  f.tls_ca = other + "/ca.pem";
  f.tls_server_name = "graphshard-server";
  RpcOptions foreign;
  ASSERT_TRUE(ApplySecurityFlags(f, Role::kClient, &foreign).ok());
  foreign.token = kToken;
  const absl::Status health = Health(server.address(), foreign);
  EXPECT_TRUE(absl::IsUnavailable(health)) << health;
  std::filesystem::remove_all(other);
}

TEST_F(TlsTest, MutualTlsRefusesAClientWithoutACertificate) {
  Server server(Options(Role::kServer, true, kToken));
  const absl::Status without = Health(server.address(), Options(Role::kClient, false, kToken));
  EXPECT_TRUE(absl::IsUnavailable(without)) << without;
  const absl::Status with = Health(server.address(), Options(Role::kClient, true, kToken));
  EXPECT_TRUE(with.ok()) << with;
}

TEST(SecurityFlagsTest, KeyAndTokenFilesMustBePrivate) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("gs_tok_", ::getpid())).string();
  std::filesystem::create_directories(dir);
  const std::string token = dir + "/token";
  std::ofstream(token) << kToken << "\n";
  ::chmod(token.c_str(), 0644);
  SecurityFlags f;
  f.token_file = token;
  RpcOptions o;
  absl::Status s = ApplySecurityFlags(f, Role::kClient, &o);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_NE(s.message().find(token), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("0644"), absl::string_view::npos) << s;
  ::chmod(token.c_str(), 0600);
  s = ApplySecurityFlags(f, Role::kClient, &o);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(o.token, kToken);  // the trailing newline is not part of it
  EXPECT_EQ(DescribeSecurity(o).find(kToken), std::string::npos);

  std::ofstream(token, std::ios::trunc) << "short\n";
  s = ApplySecurityFlags(f, Role::kClient, &o);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(s.message().find("short"), absl::string_view::npos) << "the message shows the token";

  f = SecurityFlags{};
  f.tls_cert = dir + "/x.pem";
  EXPECT_TRUE(absl::IsInvalidArgument(ApplySecurityFlags(f, Role::kServer, &o)));
  std::filesystem::remove_all(dir);
}

TEST(SecurityFlagsTest, TokenFromTheEnvironment) {
  ::setenv(common::kTokenEnvVar, kToken, 1);
  RpcOptions o;
  ASSERT_TRUE(ApplySecurityFlags(SecurityFlags{}, Role::kClient, &o).ok());
  EXPECT_EQ(o.token, kToken);
  ::unsetenv(common::kTokenEnvVar);
  ASSERT_TRUE(ApplySecurityFlags(SecurityFlags{}, Role::kClient, &o).ok());
  EXPECT_EQ(o.token, "");
}

TEST(AddressCredentialTest, DiffersPerHostPortAndTokenAndHoldsNoTokenBytes) {
  const std::string token = "port-credential-token-0123456789";
  const std::string a = common::AddressCredential(token, "node7:5000");
  EXPECT_EQ(a.size(), 4u + 64u);
  EXPECT_EQ(a.substr(0, 4), "gs2.");
  // Deterministic (the server recomputes it), host without case.
  EXPECT_EQ(a, common::AddressCredential(token, "node7:5000"));
  EXPECT_EQ(a, common::AddressCredential(token, "NODE7:5000"));
  EXPECT_NE(a, common::AddressCredential(token, "node7:5001"));
  EXPECT_NE(a, common::AddressCredential(token, "node8:5000"));
  EXPECT_NE(a, common::AddressCredential("port-credential-token-0123456780", "node7:5000"));
  EXPECT_EQ(a.find(token), std::string::npos);
}

TEST(AddressCredentialTest, AServerAcceptsOnlyTheNamesOfTheHostItBound) {
  using ::testing::Contains;
  using ::testing::Not;
  EXPECT_EQ(common::CredentialHosts("10.1.2.3"), std::vector<std::string>{"10.1.2.3"});
  EXPECT_EQ(common::CredentialHosts("Node7"), std::vector<std::string>{"node7"});
  const std::vector<std::string> loopback = common::CredentialHosts("127.0.0.1");
  EXPECT_THAT(loopback, Contains("localhost"));
  EXPECT_THAT(loopback, Contains("[::1]"));
  EXPECT_THAT(loopback, Not(Contains("10.1.2.3")));
  EXPECT_THAT(common::CredentialHosts("::1"), Contains("127.0.0.1"));
  const std::vector<std::string> any = common::CredentialHosts("0.0.0.0");
  EXPECT_THAT(any, Contains("127.0.0.1"));  // the loopback interface is one of this host's
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  EXPECT_THAT(any, Contains(absl::AsciiStrToLower(name)));
  EXPECT_EQ(common::HostOfAddress("[::1]:7"), "[::1]");
  EXPECT_EQ(common::HostOfAddress("node7:50051"), "node7");
  EXPECT_EQ(common::HostOfAddress("node7"), "node7");
}

TEST(AddressCredentialTest, PortOfAddressReadsTheDigitsAfterTheLastColon) {
  EXPECT_EQ(common::PortOfAddress("node7:50051"), 50051);
  EXPECT_EQ(common::PortOfAddress("[::1]:7"), 7);
  EXPECT_EQ(common::PortOfAddress("dns:///node7:443"), 443);
  EXPECT_EQ(common::PortOfAddress("node7"), -1);
  EXPECT_EQ(common::PortOfAddress("node7:"), -1);
  EXPECT_EQ(common::PortOfAddress("node7:65536"), -1);
  EXPECT_EQ(common::PortOfAddress("node7:5x"), -1);
  EXPECT_EQ(common::PortOfAddress("unix:/tmp/socket"), -1);
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(common::ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(common::ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(common::ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(common::ConstantTimeEquals("ab", "abc"));
  EXPECT_TRUE(common::ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace graphshard::rpc
