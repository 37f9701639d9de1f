// The trainers' rendezvous store (client/rendezvous_store.h) against a real server on port 0:
// what c10d needs of it (set, get that waits, add, check, wait, delete, num-keys), that it
// binds the address it is given only, refuses calls without the job token and plaintext calls
// to a TLS store, ends every wait with DEADLINE_EXCEEDED naming the key, and holds its limits
// (RESOURCE_EXHAUSTED); and the job's rendezvous made of it (CreateRendezvousStore).
#include "client/rendezvous_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "rpc/security.h"
#include "tests/testing/free_port.h"
#include "tests/testing/source_paths.h"
#include "tests/testing/wait_until.h"

namespace graphshard::client {
namespace {

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";

rpc::RpcOptions WithToken(std::string token) {
  rpc::RpcOptions o;
  o.token = std::move(token);
  return o;
}

std::unique_ptr<RendezvousStoreServer> StartOn(const std::string& host, const rpc::RpcOptions& rpc,
                                               const StoreLimits& limits = {}) {
  absl::StatusOr<std::unique_ptr<RendezvousStoreServer>> server =
      RendezvousStoreServer::Start(host, 0, rpc, limits);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<KeyValueStore> Client(const std::string& host, int port, const rpc::RpcOptions& rpc,
                                      absl::Duration timeout = absl::Seconds(10)) {
  return MakeRendezvousStoreClient(JoinHostPort(host, port), rpc, timeout);
}

using graphshard::testing::FreePort;

TEST(RendezvousStoreTest, AnswersEveryCallOfTheStoreInterface) {
  auto server = StartOn("127.0.0.1", WithToken(kToken));
  ASSERT_NE(server, nullptr);
  auto store = Client("127.0.0.1", server->port(), WithToken(kToken));
  ASSERT_TRUE(store->Set("a", std::string("\0\xff", 2)).ok());
  absl::StatusOr<std::string> a = store->Get("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, std::string("\0\xff", 2));  // values are bytes
  EXPECT_EQ(store->Add("n", 5).value_or(-1), 5);
  EXPECT_EQ(store->Add("n", -2).value_or(-1), 3);
  EXPECT_EQ(store->Get("n").value_or(""), "3");  // decimal, as c10d's stores keep counters
  EXPECT_TRUE(absl::IsInvalidArgument(store->Add("a", 1).status()));
  EXPECT_TRUE(store->Check({"a", "n"}).value_or(false));
  EXPECT_FALSE(store->Check({"a", "missing"}).value_or(true));
  EXPECT_EQ(store->NumKeys().value_or(-1), 2);
  EXPECT_EQ(store->CompareSet("c", "x", "y").value_or("?"), "");  // unset, expected "x": no
  EXPECT_EQ(store->CompareSet("c", "", "y").value_or("?"), "y");
  EXPECT_EQ(store->CompareSet("c", "z", "w").value_or("?"), "y");
  EXPECT_EQ(store->CompareSet("c", "y", "w").value_or("?"), "w");
  EXPECT_TRUE(store->Delete("c").value_or(false));
  EXPECT_FALSE(store->Delete("c").value_or(true));
  EXPECT_EQ(store->NumKeys().value_or(-1), 2);
}

TEST(RendezvousStoreTest, GetAndWaitWaitForAKeySetLater) {
  auto server = StartOn("127.0.0.1", rpc::RpcOptions{});
  ASSERT_NE(server, nullptr);
  auto store = Client("127.0.0.1", server->port(), {});
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(300));
    auto other = Client("127.0.0.1", server->port(), {});
    EXPECT_TRUE(other->Set("late", "v").ok());
    absl::SleepFor(absl::Milliseconds(300));
    EXPECT_TRUE(other->Set("later", "w").ok());
  });
  absl::StatusOr<std::string> v = store->Get("late", absl::Seconds(20));
  EXPECT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v.value_or(""), "v");
  const absl::Status w = store->Wait({"late", "later"}, absl::Seconds(20));
  EXPECT_TRUE(w.ok()) << w;
  setter.join();
}

TEST(RendezvousStoreTest, AWaitEndsWithDeadlineExceededNamingTheKey) {
  auto server = StartOn("127.0.0.1", rpc::RpcOptions{});
  ASSERT_NE(server, nullptr);
  auto store = Client("127.0.0.1", server->port(), {});
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> v = store->Get("graphshard/never", absl::Milliseconds(500));
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(v.status())) << v.status();
  EXPECT_NE(v.status().message().find("graphshard/never"), std::string::npos) << v.status();
  EXPECT_GE(took, absl::Milliseconds(450));
  EXPECT_LT(took, absl::Seconds(2)) << "the store answers at the wait's end, not the call's";
  ASSERT_TRUE(store->Set("here", "1").ok());
  const absl::Status w = store->Wait({"here", "gone"}, absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(w)) << w;
  EXPECT_NE(w.message().find("'gone'"), std::string::npos) << w;
  EXPECT_EQ(w.message().find("'here'"), std::string::npos) << "names only the unset keys: " << w;
}

TEST(RendezvousStoreTest, StoppingTheServerEndsWaitingCalls) {
  auto server = StartOn("127.0.0.1", rpc::RpcOptions{});
  ASSERT_NE(server, nullptr);
  auto store = Client("127.0.0.1", server->port(), {});
  absl::Status waited;
  std::thread waiter([&] { waited = store->Wait({"never"}, absl::Seconds(60)); });
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time start = absl::Now();
  server.reset();
  waiter.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(absl::IsUnavailable(waited)) << waited;
}

TEST(RendezvousStoreTest, RefusesCallsWithoutTheRightToken) {
  auto server = StartOn("127.0.0.1", WithToken(kToken));
  ASSERT_NE(server, nullptr);
  for (const std::string& wrong : {std::string(""), std::string("0123456789abcdef0123456789abcdeX"),
                                   absl::StrCat(kToken, "0")}) {
    auto store = Client("127.0.0.1", server->port(), WithToken(wrong));
    const absl::Status set = store->Set("k", "v");
    EXPECT_TRUE(absl::IsUnauthenticated(set)) << "token '" << wrong << "': " << set;
    EXPECT_TRUE(absl::IsUnauthenticated(store->Get("k", absl::Seconds(1)).status()));
    EXPECT_TRUE(absl::IsUnauthenticated(store->NumKeys().status()));
  }
  auto right = Client("127.0.0.1", server->port(), WithToken(kToken));
  EXPECT_EQ(right->NumKeys().value_or(-1), 0) << "a refused call stored something";
}

TEST(RendezvousStoreTest, BindsTheAddressItIsGivenOnly) {
  // Every 127.x address is this host's loopback: a store bound to 127.0.0.2 must not answer at
  // 127.0.0.1 (c10d's TCPStore listened on every interface).
  auto server = StartOn("127.0.0.2", rpc::RpcOptions{});
  ASSERT_NE(server, nullptr);
  const absl::Status there = Client("127.0.0.2", server->port(), {})->Set("k", "v");
  EXPECT_TRUE(there.ok()) << there;
  const absl::Status elsewhere =
      Client("127.0.0.1", server->port(), {}, absl::Seconds(5))->Set("k", "v");
  EXPECT_TRUE(absl::IsUnavailable(elsewhere)) << elsewhere;
  EXPECT_NE(elsewhere.message().find(absl::StrCat("127.0.0.1:", server->port())), std::string::npos)
      << elsewhere;
  // No second server on the same address and port (no SO_REUSEPORT).
  absl::StatusOr<std::unique_ptr<RendezvousStoreServer>> twice =
      RendezvousStoreServer::Start("127.0.0.2", server->port(), rpc::RpcOptions{});
  EXPECT_TRUE(absl::IsUnavailable(twice.status())) << twice.status();
  EXPECT_NE(twice.status().message().find(absl::StrCat("127.0.0.2:", server->port())),
            std::string::npos)
      << twice.status();
  // An address of another host cannot be bound.
  EXPECT_FALSE(RendezvousStoreServer::Start("192.0.2.1", 0, rpc::RpcOptions{}).ok());
}

TEST(RendezvousStoreTest, EveryLimitReturnsResourceExhausted) {
  StoreLimits limits;
  limits.max_key_bytes = 16;
  limits.max_value_bytes = 64;
  limits.max_keys = 3;
  limits.max_total_bytes = 100;
  limits.max_keys_per_call = 2;
  limits.max_waiters = 1;
  auto server = StartOn("127.0.0.1", rpc::RpcOptions{}, limits);
  ASSERT_NE(server, nullptr);
  auto store = Client("127.0.0.1", server->port(), {});
  EXPECT_TRUE(absl::IsResourceExhausted(store->Set(std::string(17, 'k'), "v")));
  EXPECT_TRUE(absl::IsResourceExhausted(store->Set("k", std::string(65, 'v'))));
  ASSERT_TRUE(store->Set("k1", std::string(60, 'v')).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(store->Set("k2", std::string(60, 'v'))))
      << "over max_total_bytes";
  ASSERT_TRUE(store->Set("k2", "v").ok());
  ASSERT_TRUE(store->Set("k3", "v").ok());
  const absl::Status fourth = store->Set("k4", "v");
  EXPECT_TRUE(absl::IsResourceExhausted(fourth)) << fourth;
  EXPECT_TRUE(store->Set("k3", "w").ok()) << "replacing a key is not a new one";
  EXPECT_TRUE(absl::IsResourceExhausted(store->Check({"a", "b", "c"}).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(store->Wait({"a", "b", "c"}, absl::Seconds(1))));
  EXPECT_TRUE(
      absl::IsResourceExhausted(store->Get(std::string(17, 'k'), absl::Seconds(1)).status()));
  // One call may wait; a second is refused at once (not made to wait for the slot). The waiter
  // waits for "x" until it is set below; a probe that waits itself (the waiter not there yet)
  // may take the slot for a moment, in which case the waiter is refused and asks again.
  std::atomic<bool> waiter_done{false};
  std::thread waiter([&] {
    auto other = Client("127.0.0.1", server->port(), {});
    absl::StatusOr<std::string> x = absl::ResourceExhaustedError("not asked yet");
    while (absl::IsResourceExhausted(x.status())) x = other->Get("x", absl::Seconds(120));
    EXPECT_EQ(x.value_or("(no value)"), "v") << x.status();
    waiter_done = true;
  });
  EXPECT_TRUE(testing::WaitUntil([&] {
    return absl::IsResourceExhausted(store->Get("y", absl::Milliseconds(1)).status());
  })) << "the waiter never held the one waiting slot";
  const absl::Status second = store->Get("y", absl::Seconds(60)).status();
  EXPECT_TRUE(absl::IsResourceExhausted(second)) << second;
  EXPECT_FALSE(waiter_done.load()) << "the refusal came after the waiter had left";
  ASSERT_TRUE(store->Delete("k2").value_or(false));  // room for "x" among max_keys
  ASSERT_TRUE(store->Set("x", "v").ok());
  waiter.join();
  EXPECT_EQ(store->NumKeys().value_or(-1), 3);
}

// The TLS material of one job, made by deploy/graphshard-certs (as the launchers do).
class RendezvousStoreTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (std::filesystem::temp_directory_path() / absl::StrCat("gs_store_tls_", ::getpid()))
            .string());
    const std::string cmd =
        absl::StrCat(testing::SourceDir(), "/deploy/graphshard-certs --out ", *dir_, " >/dev/null");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  // A trainer's options: --tls-ca, and --tls-cert/--tls-key when `with_pair`.
  static rpc::RpcOptions Options(bool with_pair, const std::string& token, bool mutual = false) {
    rpc::SecurityFlags f;
    f.tls_mutual = mutual;
    f.tls_ca = *dir_ + "/ca.pem";
    if (with_pair) {
      f.tls_cert = *dir_ + "/node.pem";
      f.tls_key = *dir_ + "/node.key";
    }
    f.tls_server_name = "graphshard-server";
    rpc::RpcOptions o;
    const absl::Status s = rpc::ApplySecurityFlags(f, rpc::Role::kClient, &o);
    EXPECT_TRUE(s.ok()) << s;
    o.token = token;
    return o;
  }
  static std::string* dir_;
};
std::string* RendezvousStoreTlsTest::dir_ = nullptr;

TEST_F(RendezvousStoreTlsTest, TlsWithTheTokenWorksAndPlaintextIsRefused) {
  auto server = StartOn("127.0.0.1", Options(true, kToken));
  ASSERT_NE(server, nullptr);
  const absl::Status tls =
      Client("127.0.0.1", server->port(), Options(false, kToken))->Set("k", "v");
  EXPECT_TRUE(tls.ok()) << tls;
  const absl::Status plain = Client("127.0.0.1", server->port(), WithToken(kToken))->Set("k", "w");
  EXPECT_TRUE(absl::IsUnavailable(plain)) << plain;
  const absl::Status no_token =
      Client("127.0.0.1", server->port(), Options(false, ""))->Set("k", "w");
  EXPECT_TRUE(absl::IsUnauthenticated(no_token)) << no_token;
  EXPECT_EQ(Client("127.0.0.1", server->port(), Options(false, kToken))->Get("k").value_or(""),
            "v");
}

TEST_F(RendezvousStoreTlsTest, RanksMeetOverMutualTlsWhenRankZeroComesLast) {
  // Rank 1 retries until rank 0 serves; its attempts must carry a TLS handshake through (calls
  // that fail at once and sleep left it to time out: gRPC 1.51 polls a connection only while a
  // call waits on it).
  const uint16_t port = FreePort();
  RendezvousConfig one;
  one.master_port = port;
  one.rank = 1;
  one.world_size = 2;
  RendezvousConfig zero = one;
  zero.rank = 0;
  absl::StatusOr<std::unique_ptr<KeyValueStore>> late;
  std::thread rank1([&] { late = CreateRendezvousStore(one, Options(true, kToken, true), 30); });
  absl::SleepFor(absl::Seconds(3));
  absl::StatusOr<std::unique_ptr<KeyValueStore>> host =
      CreateRendezvousStore(zero, Options(true, kToken, true), 30);
  rank1.join();
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_TRUE(late.ok()) << late.status();
  ASSERT_TRUE((*late)->Set("k", "v").ok());
  EXPECT_EQ((*host)->Get("k").value_or(""), "v");
}

TEST_F(RendezvousStoreTlsTest, ATlsStoreNeedsACertificate) {
  absl::StatusOr<std::unique_ptr<RendezvousStoreServer>> server =
      RendezvousStoreServer::Start("127.0.0.1", 0, Options(false, kToken));
  EXPECT_TRUE(absl::IsInvalidArgument(server.status())) << server.status();
  EXPECT_NE(server.status().message().find("--tls-cert"), std::string::npos) << server.status();
}

RendezvousConfig Rank(int rank, int world, uint16_t port) {
  RendezvousConfig c;
  c.master_addr = "127.0.0.1";
  c.master_port = port;
  c.rank = rank;
  c.world_size = world;
  return c;
}

TEST(CreateRendezvousStoreTest, RanksMeetWhicheverStartsFirst) {
  const uint16_t port = FreePort();
  absl::StatusOr<std::unique_ptr<KeyValueStore>> stores[3];
  std::vector<std::thread> ranks;
  // Rank 2 and 1 start before rank 0 serves: they ask again until it does.
  for (int r : {2, 1, 0}) {
    ranks.emplace_back(
        [&, r] { stores[r] = CreateRendezvousStore(Rank(r, 3, port), WithToken(kToken), 20); });
    absl::SleepFor(absl::Milliseconds(300));
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(stores[r].ok()) << r << ": " << stores[r].status();
  ASSERT_TRUE((*stores[1])->Set("from1", "hello").ok());
  EXPECT_EQ((*stores[2])->Get("from1").value_or(""), "hello");
  absl::StatusOr<std::unique_ptr<KeyValueStore>> beats =
      ConnectRendezvousStore(Rank(2, 3, port), WithToken(kToken), 5);
  ASSERT_TRUE(beats.ok()) << beats.status();
  EXPECT_EQ((*beats)->Get("from1").value_or(""), "hello");
}

TEST(CreateRendezvousStoreTest, FailuresNameMasterAddrAndPort) {
  const uint16_t port = FreePort();
  const std::string where = absl::StrCat("127.0.0.1:", port, " (MASTER_ADDR:MASTER_PORT)");
  // Rank 0 alone: rank 1 never checks in.
  absl::StatusOr<std::unique_ptr<KeyValueStore>> alone =
      CreateRendezvousStore(Rank(0, 2, port), WithToken(kToken), 1);
  EXPECT_TRUE(absl::IsDeadlineExceeded(alone.status())) << alone.status();
  EXPECT_NE(alone.status().message().find(where), std::string::npos) << alone.status();
  EXPECT_NE(alone.status().message().find("graphshard/rendezvous/rank/1"), std::string::npos)
      << alone.status();
  // No rank 0: rank 1 gives up after its timeout.
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<KeyValueStore>> orphan =
      CreateRendezvousStore(Rank(1, 2, port), WithToken(kToken), 1);
  EXPECT_TRUE(absl::IsUnavailable(orphan.status())) << orphan.status();
  EXPECT_NE(orphan.status().message().find(where), std::string::npos) << orphan.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // A rank with another job's token is refused by rank 0's store.
  absl::StatusOr<std::unique_ptr<KeyValueStore>> rank0;
  std::thread zero([&] { rank0 = CreateRendezvousStore(Rank(0, 2, port), WithToken(kToken), 3); });
  absl::StatusOr<std::unique_ptr<KeyValueStore>> stranger =
      CreateRendezvousStore(Rank(1, 2, port), WithToken("another job's token, 32 chars!"), 3);
  zero.join();
  EXPECT_TRUE(absl::IsUnauthenticated(stranger.status())) << stranger.status();
  EXPECT_NE(stranger.status().message().find(where), std::string::npos) << stranger.status();
  EXPECT_FALSE(rank0.ok());
}

}  // namespace
}  // namespace graphshard::client
