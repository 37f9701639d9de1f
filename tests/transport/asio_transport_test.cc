#include "transport/asio_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <future>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tests/testing/wait_until.h"
#include "transport/frame.h"

namespace graphshard::transport {
namespace {

constexpr uint16_t kEcho = 1;
constexpr uint16_t kFail = 2;
constexpr uint16_t kBlock = 3;
constexpr uint16_t kHuge = 4;

std::vector<char> Bytes(size_t n, int salt) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + salt * 7) & 0xff);
  return v;
}

// Waits for a callback's result, bounded (a test never hangs).
absl::StatusOr<Received> Wait(std::future<absl::StatusOr<Received>>& f,
                              absl::Duration at_most = absl::Seconds(20)) {
  if (f.wait_for(absl::ToChronoNanoseconds(at_most)) != std::future_status::ready) {
    return absl::InternalError("test: no answer in time");
  }
  return f.get();
}

struct Call {
  std::promise<absl::StatusOr<Received>> promise;
  std::future<absl::StatusOr<Received>> future = promise.get_future();
  ResponseCallback Done() {
    return [this](absl::StatusOr<Received> r) { promise.set_value(std::move(r)); };
  }
};

// A real server on port 0: echo (arrays reversed in order), fail, block until released, and an
// answer bigger than the frame limit.
class AsioTransportTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(AsioOptions{}); }
  void TearDown() override {
    if (!release_.HasBeenNotified()) release_.Notify();
    client_.reset();
    if (server_ != nullptr) server_->Shutdown();
  }
  void StartServer(AsioOptions options) {
    std::map<uint16_t, Handler> handlers;
    handlers[kEcho] = [](Received r, Reply reply) {
      std::reverse(r.arrays.begin(), r.arrays.end());
      reply(std::make_unique<OwnedBody>(std::move(r.arrays)));
    };
    handlers[kFail] = [](Received, Reply reply) {
      reply(absl::NotFoundError("no such rows in part 3"));
    };
    handlers[kBlock] = [this](Received, Reply reply) {
      release_.WaitForNotificationWithTimeout(absl::Seconds(30));
      reply(std::make_unique<OwnedBody>(std::vector<std::vector<char>>{Bytes(10, 1)}));
    };
    handlers[kHuge] = [](Received, Reply reply) {
      reply(std::make_unique<OwnedBody>(std::vector<std::vector<char>>{Bytes(2 << 20, 1)}));
    };
    auto started = AsioServer::Start("127.0.0.1", 0, std::move(handlers), options);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    peer_ = Endpoint{absl::StrCat("127.0.0.1:", server_->port()), "part 7"};
  }
  std::unique_ptr<AsioClient> client_ = std::make_unique<AsioClient>();
  std::unique_ptr<AsioServer> server_;
  Endpoint peer_;
  absl::Notification release_;
};

TEST_F(AsioTransportTest, RequestRoundTripsArraysOfEverySize) {
  std::vector<std::vector<char>> arrays = {Bytes(0, 0), Bytes(1, 1), Bytes(4096, 2),
                                           Bytes(64 << 20, 3), Bytes(0, 4), Bytes(12345, 5)};
  Call call;
  client_->Request(peer_, kEcho, std::make_unique<OwnedBody>(arrays),
                   absl::Now() + absl::Seconds(20), call.Done());
  absl::StatusOr<Received> r = Wait(call.future);
  ASSERT_TRUE(r.ok()) << r.status();
  std::reverse(arrays.begin(), arrays.end());
  EXPECT_TRUE(r->arrays == arrays);
  TransportStats s = server_->stats();
  EXPECT_EQ(s.requests, 1);
  EXPECT_GT(s.bytes_sent, 64 << 20);
  EXPECT_GT(s.bytes_received, 64 << 20);
}

TEST_F(AsioTransportTest, ManyConcurrentRequestsGetTheirOwnAnswers) {
  constexpr int kCalls = 200;
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::make_unique<Call>());
    client_->Request(peer_, kEcho,
                     std::make_unique<OwnedBody>(std::vector<std::vector<char>>{
                         Bytes(static_cast<size_t>(i) * 997, i), Bytes(8, i)}),
                     absl::Now() + absl::Seconds(20), calls.back()->Done());
  }
  for (int i = 0; i < kCalls; ++i) {
    absl::StatusOr<Received> r = Wait(calls[i]->future);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    ASSERT_EQ(r->arrays.size(), 2u);
    EXPECT_EQ(r->arrays[0], Bytes(8, i));
    EXPECT_EQ(r->arrays[1], Bytes(static_cast<size_t>(i) * 997, i));
  }
  EXPECT_EQ(client_->stats().requests, kCalls);
}

TEST_F(AsioTransportTest, HandlerErrorReachesTheCallerWithItsCode) {
  Call call;
  client_->Request(peer_, kFail, nullptr, absl::Now() + absl::Seconds(20), call.Done());
  absl::StatusOr<Received> r = Wait(call.future);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_NE(r.status().message().find("no such rows in part 3"), absl::string_view::npos);
  EXPECT_NE(r.status().message().find("part 7 at 127.0.0.1:"), absl::string_view::npos)
      << r.status();
  // The connection stays usable after an error answer.
  Call again;
  client_->Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(20), again.Done());
  EXPECT_TRUE(Wait(again.future).ok());
}

TEST_F(AsioTransportTest, DeadlineFreesTheCallerWhileTheServerIsStillBusy) {
  Call call;
  const absl::Time start = absl::Now();
  client_->Request(peer_, kBlock, nullptr, start + absl::Milliseconds(200), call.Done());
  absl::StatusOr<Received> r = Wait(call.future, absl::Seconds(10));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_NE(r.status().message().find("part 7"), absl::string_view::npos) << r.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  // The late answer is dropped and the connection carries the next request.
  release_.Notify();
  Call next;
  client_->Request(peer_, kEcho, std::make_unique<OwnedBody>(std::vector<std::vector<char>>{
                                     Bytes(100, 9)}),
                   absl::Now() + absl::Seconds(20), next.Done());
  absl::StatusOr<Received> n = Wait(next.future);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->arrays[0], Bytes(100, 9));
}

TEST_F(AsioTransportTest, CancelFreesTheCallerAtOnce) {
  Call call;
  uint64_t id =
      client_->Request(peer_, kBlock, nullptr, absl::Now() + absl::Seconds(60), call.Done());
  ASSERT_NE(id, 0u);
  client_->Cancel(id);
  absl::StatusOr<Received> r = Wait(call.future, absl::Seconds(5));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  client_->Cancel(id);  // a second cancel is a no-op (the promise would throw if set twice)
}

TEST_F(AsioTransportTest, UnreachablePeerIsUnavailableNamingIt) {
  server_->Shutdown();  // nobody listens on that port any more
  Call call;
  client_->Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(20), call.Done());
  absl::StatusOr<Received> r = Wait(call.future);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find(peer_.address), absl::string_view::npos) << r.status();
}

TEST_F(AsioTransportTest, OversizedRequestAndAnswerAreRefused) {
  AsioOptions small;
  small.max_frame_bytes = 1 << 20;
  server_->Shutdown();
  StartServer(small);
  client_ = std::make_unique<AsioClient>(small);
  Call big;
  client_->Request(peer_, kEcho,
                   std::make_unique<OwnedBody>(std::vector<std::vector<char>>{Bytes(2 << 20, 0)}),
                   absl::Now() + absl::Seconds(20), big.Done());
  absl::StatusOr<Received> r = Wait(big.future);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("exceeds the maximum frame size"), absl::string_view::npos);
  Call huge;
  client_->Request(peer_, kHuge, nullptr, absl::Now() + absl::Seconds(20), huge.Done());
  r = Wait(huge.future);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  Call fine;
  client_->Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(20), fine.Done());
  EXPECT_TRUE(Wait(fine.future).ok());
}

// ---------------------------------------------------------------------------------------------
// Raw sockets: frames written by hand, in pieces, malformed, or cut off.

int ConnectRaw(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads until `n` bytes, EOF, or 10 s without data; returns what was read.
std::string ReadUpTo(int fd, size_t n) {
  std::string out;
  char buf[65536];
  while (out.size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) break;
    ssize_t r = ::recv(fd, buf, std::min(sizeof(buf), n - out.size()), 0);
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

// A request frame: header, table, arrays.
std::string RequestFrame(uint16_t kind, uint64_t id, const std::vector<std::vector<char>>& arrays) {
  std::vector<uint64_t> table;
  for (const auto& a : arrays) table.push_back(a.size());
  FrameHeader h;
  h.kind = kind;
  h.request_id = id;
  h.num_arrays = static_cast<uint32_t>(arrays.size());
  h.payload_bytes = PayloadBytes(0, table);
  HeaderBytes header = EncodeHeader(h);
  std::string out(header.data(), header.size());
  out.append(reinterpret_cast<const char*>(table.data()), table.size() * 8);
  for (const auto& a : arrays) out.append(a.data(), a.size());
  return out;
}

// The answer frame read from `fd`: header (decoded), message, arrays.
struct RawAnswer {
  FrameHeader header;
  std::string message;
  std::vector<std::string> arrays;
};
absl::StatusOr<RawAnswer> ReadAnswer(int fd) {
  std::string hb = ReadUpTo(fd, kHeaderBytes);
  if (hb.size() != kHeaderBytes) return absl::UnavailableError("no header");
  HeaderBytes bytes;
  std::memcpy(bytes.data(), hb.data(), kHeaderBytes);
  RawAnswer a;
  auto header = DecodeHeader(bytes, uint64_t{1} << 30);
  if (!header.ok()) return header.status();
  a.header = *header;
  std::string rest = ReadUpTo(fd, a.header.payload_bytes);
  if (rest.size() != a.header.payload_bytes) return absl::UnavailableError("short payload");
  a.message = rest.substr(0, a.header.message_bytes);
  size_t at = a.header.message_bytes + 8 * a.header.num_arrays;
  for (uint32_t i = 0; i < a.header.num_arrays; ++i) {
    uint64_t len = 0;
    std::memcpy(&len, rest.data() + a.header.message_bytes + 8 * i, 8);
    a.arrays.push_back(rest.substr(at, len));
    at += len;
  }
  return a;
}

TEST_F(AsioTransportTest, FrameSplitAcrossManySmallWritesIsReassembled) {
  int fd = ConnectRaw(server_->port());
  ASSERT_GE(fd, 0);
  std::vector<std::vector<char>> arrays = {Bytes(1000, 1), Bytes(0, 2), Bytes(333, 3)};
  std::string frame = RequestFrame(kEcho, 42, arrays);
  // One byte at a time through the header and table, then 7-byte pieces.
  for (size_t i = 0; i < frame.size();) {
    size_t piece = i < 80 ? 1 : 7;
    piece = std::min(piece, frame.size() - i);
    WriteAll(fd, frame.data() + i, piece);
    i += piece;
    if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  absl::StatusOr<RawAnswer> a = ReadAnswer(fd);
  ::close(fd);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.request_id, 42u);
  EXPECT_TRUE(a->header.answer());
  ASSERT_EQ(a->arrays.size(), 3u);
  EXPECT_EQ(a->arrays[0], std::string(arrays[2].begin(), arrays[2].end()));
  EXPECT_EQ(a->arrays[2], std::string(arrays[0].begin(), arrays[0].end()));
}

// Every malformed frame gets an InvalidArgument answer naming the problem, then the server
// closes that connection, and keeps serving others.
TEST_F(AsioTransportTest, MalformedFramesAreRefusedAndTheServerSurvives) {
  AsioOptions small;
  small.max_frame_bytes = 1 << 20;
  server_->Shutdown();
  StartServer(small);
  struct Case {
    const char* name;
    std::string bytes;
    const char* expect;
  };
  std::string bad_magic = RequestFrame(kEcho, 1, {Bytes(10, 0)});
  std::memcpy(bad_magic.data(), "GET ", 4);
  std::string bad_version = RequestFrame(kEcho, 2, {Bytes(10, 0)});
  bad_version[4] = 7;
  std::string bad_table = RequestFrame(kEcho, 3, {Bytes(10, 0)});
  bad_table[kHeaderBytes] = 9;  // the table says 9 bytes, the frame carries 10
  FrameHeader oversized;
  oversized.kind = kEcho;
  oversized.request_id = 4;
  oversized.payload_bytes = uint64_t{2} << 30;
  HeaderBytes ob = EncodeHeader(oversized);
  const std::vector<Case> cases = {
      {"magic", bad_magic, "bad frame magic"},
      {"version", bad_version, "frame version 7"},
      {"unknown kind", RequestFrame(99, 5, {}), "unknown request kind 99"},
      {"table", bad_table, "arrays add up to 9 bytes"},
      {"oversized", std::string(ob.data(), ob.size()), "exceeds the maximum frame size"},
  };
  for (const Case& c : cases) {
    int fd = ConnectRaw(server_->port());
    ASSERT_GE(fd, 0) << c.name;
    WriteAll(fd, c.bytes.data(), c.bytes.size());
    absl::StatusOr<RawAnswer> a = ReadAnswer(fd);
    ASSERT_TRUE(a.ok()) << c.name << ": " << a.status();
    EXPECT_EQ(a->header.status, absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(a->message.find(c.expect), std::string::npos) << c.name << ": " << a->message;
    EXPECT_EQ(ReadUpTo(fd, 1), "") << c.name << ": the connection should be closed";
    ::close(fd);
  }
  Call call;
  client_->Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(20), call.Done());
  EXPECT_TRUE(Wait(call.future).ok());
  EXPECT_GE(server_->stats().errors, 1);
}

TEST_F(AsioTransportTest, ServerClosesAConnectionStalledMidFrame) {
  AsioOptions quick;
  quick.frame_timeout = absl::Milliseconds(200);
  server_->Shutdown();
  StartServer(quick);
  int fd = ConnectRaw(server_->port());
  ASSERT_GE(fd, 0);
  std::string frame = RequestFrame(kEcho, 1, {Bytes(1000, 0)});
  WriteAll(fd, frame.data(), kHeaderBytes + 8 + 10);  // then nothing
  const absl::Time start = absl::Now();
  EXPECT_EQ(ReadUpTo(fd, 1), "");  // EOF: closed by the server
  EXPECT_LT(absl::Now() - start, absl::Seconds(9));
  ::close(fd);
}

// A header sent in part and then held (a slow-header client) is closed after the frame timeout,
// as a frame stalled after its header is; the server keeps serving others meanwhile.
TEST_F(AsioTransportTest, ServerClosesAConnectionThatSendsPartOfAHeader) {
  AsioOptions quick;
  quick.frame_timeout = absl::Milliseconds(200);
  server_->Shutdown();
  StartServer(quick);
  for (const size_t sent : {size_t{1}, kHeaderBytes - 1}) {
    int fd = ConnectRaw(server_->port());
    ASSERT_GE(fd, 0);
    std::string frame = RequestFrame(kEcho, 1, {Bytes(10, 0)});
    WriteAll(fd, frame.data(), sent);  // then nothing
    const absl::Time start = absl::Now();
    EXPECT_EQ(ReadUpTo(fd, 1), "") << sent << " header bytes";  // EOF: closed by the server
    EXPECT_LT(absl::Now() - start, absl::Seconds(9));
    ::close(fd);
  }
  Call fine;
  client_->Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(20), fine.Done());
  EXPECT_TRUE(Wait(fine.future).ok());
}

// A connection that never completes a first frame is closed after first_frame_timeout; one that
// sends a request in time is served, and may then stay idle between frames.
TEST_F(AsioTransportTest, ServerClosesAConnectionWithoutAFirstFrame) {
  AsioOptions quick;
  quick.first_frame_timeout = absl::Milliseconds(300);
  server_->Shutdown();
  StartServer(quick);
  int silent = ConnectRaw(server_->port());
  ASSERT_GE(silent, 0);
  const absl::Time start = absl::Now();
  EXPECT_EQ(ReadUpTo(silent, 1), "");  // closed by the server
  EXPECT_LT(absl::Now() - start, absl::Seconds(9));
  ::close(silent);
  Call first;
  client_->Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(20), first.Done());
  ASSERT_TRUE(Wait(first.future).ok());
  absl::SleepFor(absl::Milliseconds(600));  // idle past the first-frame deadline
  Call second;
  client_->Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(20), second.Done());
  EXPECT_TRUE(Wait(second.future).ok()) << "an established connection was closed while idle";
}

// Connections past the caps are closed as they are accepted (counted); those held stay served,
// and once they close, new ones are accepted again.
TEST_F(AsioTransportTest, ConnectionsPastTheCapsAreShedAndTheHeldOnesServed) {
  AsioOptions capped;
  capped.max_connections = 8;
  capped.max_connections_per_address = 3;
  server_->Shutdown();
  StartServer(capped);
  // Three connections from 127.0.0.1, each served once (so the server holds all three).
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(ConnectRaw(server_->port()));
    ASSERT_GE(held.back(), 0);
    std::string frame = RequestFrame(kEcho, 1, {Bytes(10, 3)});
    WriteAll(held.back(), frame.data(), frame.size());
    absl::StatusOr<RawAnswer> a = ReadAnswer(held.back());
    ASSERT_TRUE(a.ok()) << a.status();
  }
  int extra = ConnectRaw(server_->port());
  ASSERT_GE(extra, 0);
  EXPECT_EQ(ReadUpTo(extra, 1), "") << "the fourth connection from one address was kept";
  ::close(extra);
  EXPECT_GE(server_->stats().connections_refused, 1);
  // A held connection is still served (a raw echo request on it).
  std::string frame = RequestFrame(kEcho, 5, {Bytes(10, 3)});
  WriteAll(held[0], frame.data(), frame.size());
  absl::StatusOr<RawAnswer> a = ReadAnswer(held[0]);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.status, absl::StatusCode::kOk);
  for (int fd : held) ::close(fd);
  // With the held ones gone, the client's connections are accepted again.
  ASSERT_TRUE(graphshard::testing::WaitUntil([&] {
    Call call;
    client_->Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(5), call.Done());
    return Wait(call.future).ok();
  }));
}

// At a cap, connections that have sent no complete frame (stalled ones, as an attacker holds) make
// room: a peer's new connection gets in and is served, and a stalled one is closed for it.
TEST_F(AsioTransportTest, AtTheCapAStalledConnectionMakesRoomForAPeer) {
  AsioOptions capped;
  capped.max_connections = 8;
  capped.max_connections_per_address = 3;
  server_->Shutdown();
  StartServer(capped);
  std::vector<int> stalled;
  for (int i = 0; i < 3; ++i) {
    stalled.push_back(ConnectRaw(server_->port()));
    ASSERT_GE(stalled.back(), 0);
    WriteAll(stalled.back(), "\x01\x02\x03", 3);  // part of a header, then nothing
  }
  Call call;
  client_->Request(peer_, kEcho, std::make_unique<OwnedBody>(std::vector<std::vector<char>>{
                                     Bytes(10, 7)}),
                   absl::Now() + absl::Seconds(20), call.Done());
  absl::StatusOr<Received> r = Wait(call.future);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->arrays[0], Bytes(10, 7));
  int closed = 0;
  for (int fd : stalled) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0 && ReadUpTo(fd, 1).empty()) ++closed;
    ::close(fd);
  }
  EXPECT_GE(closed, 1) << "no stalled connection was closed to make room";
  EXPECT_GE(server_->stats().connections_refused, 1);
}

// A fake peer on a real socket that answers every request with the first `cut` bytes of a
// valid 1 MiB answer frame and then closes (dies mid-frame) or, with `stall`, keeps the
// connection open and sends nothing more.
class HalfAnsweringPeer {
 public:
  HalfAnsweringPeer(size_t cut, bool stall) : cut_(cut), stall_(stall) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 4);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~HalfAnsweringPeer() {
    done_.Notify();
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }
  int port() const { return port_; }

 private:
  void Run() {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 20000) <= 0) return;
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    std::string hb = ReadUpTo(fd, kHeaderBytes);
    HeaderBytes bytes{};
    std::memcpy(bytes.data(), hb.data(), std::min(hb.size(), kHeaderBytes));
    auto h = DecodeHeader(bytes, uint64_t{1} << 30);
    if (h.ok()) ReadUpTo(fd, h->payload_bytes);
    FrameHeader a;
    a.kind = h.ok() ? h->kind : 1;
    a.request_id = h.ok() ? h->request_id : 0;
    a.flags = kFlagAnswer;
    a.num_arrays = 1;
    a.payload_bytes = 8 + (1 << 20);
    HeaderBytes ab = EncodeHeader(a);
    std::string answer(ab.data(), ab.size());
    uint64_t len = 1 << 20;
    answer.append(reinterpret_cast<const char*>(&len), 8);
    answer.append(1 << 20, 'x');
    WriteAll(fd, answer.data(), std::min(cut_, answer.size()));
    if (stall_) done_.WaitForNotificationWithTimeout(absl::Seconds(30));
    ::close(fd);
  }
  size_t cut_;
  bool stall_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  absl::Notification done_;
};

constexpr char kToken[] = "job-token-0123456789abcdef";

AsioOptions WithToken(const std::string& token) {
  AsioOptions o;
  o.token = token;
  return o;
}

TEST_F(AsioTransportTest, ServerWithATokenRefusesAPeerWithoutIt) {
  server_->Shutdown();
  StartServer(WithToken(kToken));
  Call call;
  client_->Request(peer_, kEcho, std::make_unique<OwnedBody>(std::vector<std::vector<char>>{
                                     Bytes(10, 1)}),
                   absl::Now() + absl::Seconds(20), call.Done());
  absl::StatusOr<Received> r = Wait(call.future);
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("requires the job token"), absl::string_view::npos)
      << r.status();
  EXPECT_EQ(server_->stats().requests, 0) << "a request was served without the token";
}

TEST_F(AsioTransportTest, ServerWithATokenRefusesAWrongToken) {
  server_->Shutdown();
  StartServer(WithToken(kToken));
  for (const std::string& wrong : {std::string("job-token-0123456789abcdeX"), std::string("j"),
                                  absl::StrCat(kToken, "x")}) {
    AsioClient client(WithToken(wrong));
    Call call;
    client.Request(peer_, kEcho, nullptr, absl::Now() + absl::Seconds(20), call.Done());
    absl::StatusOr<Received> r = Wait(call.future);
    EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << wrong << ": " << r.status();
    EXPECT_NE(r.status().message().find("wrong job token"), absl::string_view::npos)
        << r.status();
  }
  EXPECT_EQ(server_->stats().requests, 0);
}

TEST_F(AsioTransportTest, TheRightTokenIsServedOnEveryConnection) {
  server_->Shutdown();
  StartServer(WithToken(kToken));
  AsioOptions options = WithToken(kToken);
  options.connections_per_peer = 3;
  AsioClient client(options);
  for (int i = 0; i < 6; ++i) {  // round-robin: every connection opens with its hello
    Call call;
    client.Request(peer_, kEcho, std::make_unique<OwnedBody>(std::vector<std::vector<char>>{
                                     Bytes(100, i)}),
                   absl::Now() + absl::Seconds(20), call.Done());
    absl::StatusOr<Received> r = Wait(call.future);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->arrays[0], Bytes(100, i));
  }
  EXPECT_EQ(server_->stats().requests, 6);
}

TEST_F(AsioTransportTest, UnauthenticatedPeerCannotMakeTheServerAllocateABigFrame) {
  server_->Shutdown();
  StartServer(WithToken(kToken));
  FrameHeader big;
  big.kind = kEcho;
  big.request_id = 9;
  big.payload_bytes = uint64_t{512} << 20;  // within max_frame_bytes, far above a hello
  HeaderBytes hb = EncodeHeader(big);
  int fd = ConnectRaw(server_->port());
  ASSERT_GE(fd, 0);
  WriteAll(fd, hb.data(), hb.size());
  absl::StatusOr<RawAnswer> a = ReadAnswer(fd);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->header.status, absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a->message.find("exceeds the maximum frame size"), std::string::npos) << a->message;
  EXPECT_EQ(ReadUpTo(fd, 1), "") << "the connection should be closed";
  ::close(fd);
}

TEST(AsioTransportPeerDeathTest, PeerDyingMidFrameIsUnavailableNamingIt) {
  for (size_t cut : {size_t{20}, kHeaderBytes + 4, size_t{300000}}) {
    HalfAnsweringPeer peer(cut, /*stall=*/false);
    AsioClient client;
    Call call;
    Endpoint ep{absl::StrCat("127.0.0.1:", peer.port()), "part 3"};
    const absl::Time start = absl::Now();
    client.Request(ep, kEcho, nullptr, start + absl::Seconds(30), call.Done());
    absl::StatusOr<Received> r = Wait(call.future);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << cut << ": " << r.status();
    EXPECT_NE(r.status().message().find("part 3 at 127.0.0.1:"), absl::string_view::npos)
        << r.status();
    EXPECT_NE(r.status().message().find("mid-frame"), absl::string_view::npos) << r.status();
    EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "the death, not the deadline, ends it";
  }
}

TEST(AsioTransportPeerDeathTest, PeerStallingMidFrameEndsAtTheDeadline) {
  HalfAnsweringPeer peer(100000, /*stall=*/true);
  AsioClient client;
  Call call;
  Endpoint ep{absl::StrCat("127.0.0.1:", peer.port()), "part 3"};
  const absl::Time start = absl::Now();
  client.Request(ep, kEcho, nullptr, start + absl::Milliseconds(300), call.Done());
  absl::StatusOr<Received> r = Wait(call.future);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_NE(r.status().message().find("part 3"), absl::string_view::npos) << r.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

}  // namespace
}  // namespace graphshard::transport
