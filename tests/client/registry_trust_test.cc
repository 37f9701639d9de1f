// Registry trust: a fake server written into the registry. It answers like a graphshard server
// (it relays the metadata and batches of a real server of another job, which has no token) but
// holds no job token, and its batches name a shared-memory object of another application. A
// trainer with the token refuses it at GetMetadata, naming the entry; a trainer without a token
// still never opens, writes or unlinks the object. Real in-process servers on port 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "client/server_set.h"
#include "common/registry.h"
#include "rpc/channel.h"
#include "shm/ring.h"
#include "tests/server/test_cluster.h"

namespace graphshard::client {
namespace {

constexpr char kToken[] = "registry-trust-token-0123456789";
constexpr char kVictimBytes[] = "APP-DATA";  // 8 bytes the other application keeps there

// Answers GetMetadata and StreamBatches with what a real server (of another job) answers, minus
// any proof of our token, and points each batch at `victim`.
class FakeServer final : public v1::PartitionService::Service {
 public:
  // Announces `prefix` as its own and names `victim` as every batch's ring segment.
  FakeServer(const std::string& real, std::string victim,
             std::string prefix = "/graphshard-1-ab-")
      : real_(v1::PartitionService::NewStub(rpc::MakeChannel(real))), victim_(std::move(victim)),
        prefix_(std::move(prefix)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() override { server_->Shutdown(); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  grpc::Status GetMetadata(grpc::ServerContext*, const v1::GetMetadataRequest*,
                           v1::Metadata* response) override {
    grpc::ClientContext ctx;
    grpc::Status s = real_->GetMetadata(&ctx, v1::GetMetadataRequest(), response);
    response->set_job_proof(std::string(32, 'x'));  // it cannot compute the real one
    response->set_shm_prefix(prefix_);
    return s;
  }
  grpc::Status StreamBatches(grpc::ServerContext*, const v1::StreamBatchesRequest* request,
                             grpc::ServerWriter<v1::Minibatch>* writer) override {
    v1::StreamBatchesRequest inline_request = *request;
    inline_request.clear_client_host_id();  // inline arrays from the real server
    inline_request.set_shm_ring(0);
    grpc::ClientContext ctx;
    auto reader = real_->StreamBatches(&ctx, inline_request);
    v1::Minibatch m;
    while (reader->Read(&m)) {
      m.set_shm_name(victim_);
      m.set_shm_size(8);
      m.set_shm_ring(true);
      m.set_shm_ring_serial(1);
      if (!writer->Write(m)) break;
    }
    ctx.TryCancel();
    reader->Finish().ok();
    return grpc::Status::OK;
  }

 private:
  std::unique_ptr<v1::PartitionService::Stub> real_;
  std::string victim_;
  std::string prefix_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

class RegistryTrustTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graph_ = new partitioner::Graph(graphshard::testing::ReadCora());
    other_job_ = new graphshard::testing::TestCluster(*graph_, 1);  // no token
  }
  static void TearDownTestSuite() {
    delete other_job_;
    delete graph_;
  }
  void SetUp() override {
    victim_ = absl::StrCat("/gs-test-other-app-", ::getpid());
    const int fd = ::shm_open(victim_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << victim_;
    ASSERT_EQ(::write(fd, kVictimBytes, 8), 8);
    ASSERT_EQ(::ftruncate(fd, 1 << 20), 0);
    ::close(fd);
    registry_ = graphshard::testing::MakeTempDir() + "/registry";
    std::filesystem::create_directories(registry_);
    fake_ = std::make_unique<FakeServer>(other_job_->server(0).address(), victim_);
    ASSERT_TRUE(common::PublishAddress(registry_, 0, fake_->address()).ok());
  }
  void TearDown() override {
    fake_.reset();
    ::shm_unlink(victim_.c_str());
    std::filesystem::remove_all(std::filesystem::path(registry_).parent_path());
  }
  // The other application's object: still there, its first bytes as it wrote them.
  void ExpectVictimIntact() {
    const int fd = ::shm_open(victim_.c_str(), O_RDONLY, 0);
    ASSERT_GE(fd, 0) << victim_ << " was unlinked";
    char head[8] = {};
    EXPECT_EQ(::read(fd, head, 8), 8);
    ::close(fd);
    EXPECT_EQ(std::string(head, 8), std::string(kVictimBytes, 8)) << victim_ << " was written";
  }

  // A same-host stream of `seeds` (batches of 64, fanouts 5,3), as a trainer opens it.
  static StreamOptions SameHostStream(const std::vector<int64_t>& seeds) {
    StreamOptions so;
    so.seeds = seeds;
    so.batch_size = 64;
    so.fanouts = {5, 3};
    so.client_host_id = shm::HostId();
    return so;
  }
  // The status of the first batch `client` reads from a stream of `seeds`; the stream is dropped
  // on return, which drains the batches already sent.
  static absl::Status FirstBatchStatus(PartitionClient& client, const ServerMetadata& md,
                                       const std::vector<int64_t>& seeds) {
    absl::StatusOr<std::unique_ptr<BatchStream>> stream =
        client.StreamBatches(SameHostStream(seeds), md);
    if (!stream.ok()) return stream.status();
    return (*stream)->Next().status();
  }

  static partitioner::Graph* graph_;
  static graphshard::testing::TestCluster* other_job_;
  std::string victim_;
  std::string registry_;
  std::unique_ptr<FakeServer> fake_;
};
partitioner::Graph* RegistryTrustTest::graph_ = nullptr;
graphshard::testing::TestCluster* RegistryTrustTest::other_job_ = nullptr;

TEST_F(RegistryTrustTest, FakeServerWithoutTheTokenIsRefusedNamingTheEntry) {
  DiscoveryOptions options;
  options.registry_dir = registry_;
  options.server_wait_s = 1;  // a real replica could still register: it waits, then names why
  options.client.rpc.token = kToken;
  const absl::StatusOr<ServerSet> servers = ConnectServers(options);
  ASSERT_FALSE(servers.ok());
  EXPECT_EQ(servers.status().code(), absl::StatusCode::kDeadlineExceeded) << servers.status();
  EXPECT_NE(servers.status().message().find("part 0"), absl::string_view::npos) << servers.status();
  EXPECT_NE(servers.status().message().find(fake_->address()), absl::string_view::npos)
      << servers.status();
  EXPECT_NE(servers.status().message().find("job token"), absl::string_view::npos)
      << servers.status();
  ExpectVictimIntact();
}

TEST_F(RegistryTrustTest, SegmentOfAnotherApplicationIsNeverOpened) {
  // No token: the metadata is taken, but the batches' segment is not this server's.
  auto client = PartitionClient::Create(fake_->address(), ClientOptions{}, 0);
  ASSERT_TRUE(client.ok());
  absl::StatusOr<ServerMetadata> md = (*client)->GetMetadata();
  ASSERT_TRUE(md.ok()) << md.status();
  absl::StatusOr<std::vector<int64_t>> seeds =
      PartitionClient::Create(other_job_->server(0).address(), ClientOptions{}, 0)
          .value()
          ->GetSplit("train");
  ASSERT_TRUE(seeds.ok()) << seeds.status();
  // Dropping the stream drains the batches already sent: none of them is touched either.
  const absl::Status first = FirstBatchStatus(**client, *md, *seeds);
  EXPECT_EQ(first.code(), absl::StatusCode::kDataLoss) << first;
  EXPECT_NE(first.message().find(victim_), absl::string_view::npos) << first;
  ExpectVictimIntact();
}

// The fake announces a live server's shared-memory prefix and names, as its batches' segments,
// that server's host-proof object and a segment of the right form made for another client: the
// trainer opens and unlinks neither (it checks the tag of its own key in every name).
TEST_F(RegistryTrustTest, ALiveServersObjectsAreNeverUnlinkedThroughAFake) {
  auto real = PartitionClient::Create(other_job_->server(0).address(), ClientOptions{}, 0);
  ASSERT_TRUE(real.ok());
  absl::StatusOr<ServerMetadata> real_md = (*real)->GetMetadata();
  ASSERT_TRUE(real_md.ok()) << real_md.status();
  v1::Metadata raw;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(v1::PartitionService::NewStub(rpc::MakeChannel(other_job_->server(0).address()))
                    ->GetMetadata(&ctx, v1::GetMetadataRequest(), &raw)
                    .ok());
  }
  ASSERT_FALSE(raw.host_proof_name().empty());
  const std::string other_clients =
      shm::TaggedSegmentName(absl::StrCat(real_md->shm_prefix, 999999), "another-client-key-0123");
  const int made = ::shm_open(other_clients.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(made, 0) << other_clients;
  ASSERT_EQ(::ftruncate(made, 1 << 20), 0);
  ::close(made);
  absl::StatusOr<std::vector<int64_t>> seeds = (*real)->GetSplit("train");
  ASSERT_TRUE(seeds.ok()) << seeds.status();
  for (const std::string& victim : {raw.host_proof_name(), other_clients}) {
    FakeServer fake(other_job_->server(0).address(), victim, real_md->shm_prefix);
    auto client = PartitionClient::Create(fake.address(), ClientOptions{}, 0);
    ASSERT_TRUE(client.ok());
    absl::StatusOr<ServerMetadata> md = (*client)->GetMetadata();
    ASSERT_TRUE(md.ok()) << md.status();
    // Dropping the stream drains the batches already sent: none is touched either.
    const absl::Status first = FirstBatchStatus(**client, *md, *seeds);
    EXPECT_EQ(first.code(), absl::StatusCode::kDataLoss) << first;
    EXPECT_NE(first.message().find("made for this client"), absl::string_view::npos) << first;
    const int fd = ::shm_open(victim.c_str(), O_RDONLY, 0);
    EXPECT_GE(fd, 0) << victim << " was unlinked through the fake";
    if (fd >= 0) ::close(fd);
  }
  ::shm_unlink(other_clients.c_str());
  // The live server still proves the same host to a real client: its object is intact.
  absl::StatusOr<std::unique_ptr<BatchStream>> stream =
      (*real)->StreamBatches(SameHostStream(*seeds), *real_md);
  ASSERT_TRUE(stream.ok()) << stream.status();
  int batches = 0;
  for (;;) {
    absl::StatusOr<absl::optional<MinibatchData>> batch = (*stream)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    if (!batch->has_value()) break;
    ++batches;
  }
  EXPECT_GT(batches, 0);
}

TEST(RegistryFolderTest, AFolderOthersMayWriteIsRefusedWithAToken) {
  const std::string dir = graphshard::testing::MakeTempDir();
  EXPECT_TRUE(common::CheckRegistryFolder(dir).ok());
  std::filesystem::permissions(dir, std::filesystem::perms::group_write,
                               std::filesystem::perm_options::add);
  const absl::Status s = common::CheckRegistryFolder(dir);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find(dir), absl::string_view::npos) << s;
  EXPECT_TRUE(absl::IsNotFound(common::CheckRegistryFolder(dir + "/missing")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace graphshard::client
