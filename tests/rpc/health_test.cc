// The health client and channels against a real gRPC server on port 0, built with the same
// ConfigureServerBuilder as graphshard-server.
#include "rpc/health.h"

#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/graphshard.grpc.pb.h"
#include "rpc/channel.h"

namespace graphshard::rpc {
namespace {

class HealthServer {
 public:
  HealthServer() {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    ConfigureServerBuilder(builder, "127.0.0.1:0", RpcOptions{}, &port_);
    builder.RegisterService(&service_);  // a server needs one service of its own to start
    server_ = builder.BuildAndStart();
  }
  ~HealthServer() { server_->Shutdown(); }
  int port() const { return port_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  void SetServing(bool serving) { server_->GetHealthCheckService()->SetServingStatus(serving); }

 private:
  int port_ = 0;
  v1::PartitionService::Service service_;  // every method UNIMPLEMENTED
  std::unique_ptr<grpc::Server> server_;
};

TEST(ChannelTest, ServerBindsPortZeroAndChannelConnects) {
  HealthServer server;
  ASSERT_GT(server.port(), 0);
  std::shared_ptr<grpc::Channel> channel = MakeChannel(server.address());
  ASSERT_NE(channel, nullptr);
  EXPECT_TRUE(channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10))));
  EXPECT_NE(MakeServerCredentials(), nullptr);
}

TEST(HealthCheckTest, ServingServerIsOk) {
  HealthServer server;
  server.SetServing(true);
  const absl::Status s =
      CheckHealth(MakeChannel(server.address()), absl::Now() + absl::Seconds(10));
  EXPECT_TRUE(s.ok()) << s;
}

TEST(HealthCheckTest, NotServingServerIsUnavailable) {
  HealthServer server;
  server.SetServing(false);
  const absl::Status s =
      CheckHealth(MakeChannel(server.address()), absl::Now() + absl::Seconds(10));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("not SERVING"), absl::string_view::npos) << s;
}

TEST(HealthCheckTest, UnreachableAddressHitsTheDeadline) {
  // Bind a port, then stop the server: nothing listens there any more.
  std::string address;
  {
    HealthServer server;
    address = server.address();
  }
  const absl::Time start = absl::Now();
  const absl::Status waited = CheckHealth(MakeChannel(address), start + absl::Milliseconds(500),
                                          HealthCheckOptions{.wait_for_ready = true});
  EXPECT_EQ(waited.code(), absl::StatusCode::kDeadlineExceeded) << waited;
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(400));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  // Without wait_for_ready the call fails fast (or at the deadline), never OK.
  const absl::Status fast = CheckHealth(MakeChannel(address), absl::Now() + absl::Seconds(5));
  EXPECT_TRUE(absl::IsUnavailable(fast) || absl::IsDeadlineExceeded(fast)) << fast;
}

}  // namespace
}  // namespace graphshard::rpc
