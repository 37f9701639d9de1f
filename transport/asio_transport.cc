#include "transport/asio_transport.h"

#include <pthread.h>

#include <algorithm>
#include <future>
#include <utility>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/secret.h"
#include "transport/internal/framed_socket.h"

namespace graphshard::transport {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using internal::Frame;
using internal::FramedSocket;

namespace {

std::string PeerName(const Endpoint& peer) {
  return peer.name.empty() ? peer.address : absl::StrCat(peer.name, " at ", peer.address);
}

// Threads carry names (at most 15 characters) so that `top -H` tells an operator which of a
// server's pools is busy.
void NameThisThread(const char* name) { pthread_setname_np(pthread_self(), name); }

void StartThreads(asio::io_context& io, int n, const char* name,
                  std::vector<std::thread>& threads) {
  for (int i = 0; i < std::max(1, n); ++i) {
    threads.emplace_back([&io, name] {
      NameThisThread(name);
      io.run();
    });
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Client

struct AsioClient::Pending {
  uint16_t kind = 0;
  ResponseCallback done;
  std::unique_ptr<asio::steady_timer> timer;
  FramedSocket* socket = nullptr;
};

struct AsioClient::Pool {
  std::vector<std::shared_ptr<FramedSocket>> sockets;  // null: not open (yet, or any more)
  size_t next = 0;
};

AsioClient::AsioClient(AsioOptions options)
    : options_(options),
      work_(std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
          io_.get_executor())) {
  StartThreads(io_, options_.io_threads, "gs-peer-io", threads_);
}

AsioClient::~AsioClient() {
  std::vector<uint64_t> ids;
  std::vector<std::shared_ptr<FramedSocket>> sockets;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, p] : pending_) ids.push_back(id);
    for (auto& [address, pool] : pools_) {
      for (auto& s : pool->sockets) {
        if (s != nullptr) sockets.push_back(s);
      }
    }
  }
  for (uint64_t id : ids) Finish(id, absl::CancelledError("bulk transport client shutting down"));
  for (auto& s : sockets) s->Close(absl::CancelledError("bulk transport client shutting down"));
  work_.reset();
  for (std::thread& t : threads_) t.join();
}

absl::StatusOr<std::shared_ptr<FramedSocket>> AsioClient::Connection(const Endpoint& peer,
                                                                     absl::Time deadline) {
  std::unique_ptr<Pool>& pool = pools_[peer.address];
  if (pool == nullptr) {
    pool = std::make_unique<Pool>();
    pool->sockets.resize(std::max(1, options_.connections_per_peer));
  }
  std::shared_ptr<FramedSocket>& slot = pool->sockets[pool->next++ % pool->sockets.size()];
  if (slot != nullptr) return slot;
  std::string host, port;
  absl::Status split = internal::SplitAddress(peer.address, &host, &port);
  if (!split.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(PeerName(peer), ": ", split.message()));
  }
  internal::SocketOptions socket_options{.max_frame_bytes = options_.max_frame_bytes,
                                         .frame_timeout = options_.frame_timeout,
                                         .socket_buffer_bytes = options_.socket_buffer_bytes};
  slot = std::make_shared<FramedSocket>(tcp::socket(asio::make_strand(io_)),
                                        FramedSocket::Role::kClient, PeerName(peer),
                                        socket_options);
  FramedSocket* raw = slot.get();
  slot->Connect(
      host, port, deadline, [this, raw](Frame frame) { OnFrame(raw, std::move(frame)); },
      [this, raw](const absl::Status& why) { OnClose(raw, why); });
  if (!options_.token.empty()) {
    // Queued before any request can use this connection (we hold mu_): it goes out first.
    FrameHeader hello;
    hello.kind = kHelloKind;
    // The credential for the address dialled, never the token itself (common::AddressCredential).
    const std::string credential = common::AddressCredential(options_.token, peer.address);
    std::vector<std::vector<char>> arrays(1);
    arrays[0].assign(credential.begin(), credential.end());
    slot->Send(hello, std::string(), std::make_unique<OwnedBody>(std::move(arrays)));
  }
  return slot;
}

uint64_t AsioClient::Request(const Endpoint& peer, uint16_t kind, std::unique_ptr<Body> body,
                             absl::Time deadline, ResponseCallback done) {
  if (kind == 0) {
    done(absl::InvalidArgumentError("bulk request kind 0 is not a request kind"));
    return 0;
  }
  uint64_t bytes = 0;
  size_t arrays = 0;
  if (body != nullptr) {
    for (const absl::Span<const char>& a : body->Arrays()) {
      bytes += a.size() + 8;
      ++arrays;
    }
  }
  if (bytes > options_.max_frame_bytes || arrays > kMaxArrays) {
    done(absl::InvalidArgumentError(
        absl::StrCat("bulk request of ", bytes, " bytes in ", arrays, " arrays to ",
                     PeerName(peer), " exceeds the maximum frame size (",
                     options_.max_frame_bytes, " bytes, ", kMaxArrays, " arrays)")));
    return 0;
  }
  uint64_t id = 0;
  std::shared_ptr<FramedSocket> socket;
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<std::shared_ptr<FramedSocket>> found = Connection(peer, deadline);
    if (found.ok()) {
      socket = *std::move(found);
      id = next_id_++;
      auto p = std::make_unique<Pending>();
      p->kind = kind;
      p->done = std::move(done);
      p->socket = socket.get();
      p->timer = std::make_unique<asio::steady_timer>(io_);
      p->timer->expires_after(
          absl::ToChronoNanoseconds(std::max(absl::ZeroDuration(), deadline - absl::Now())));
      p->timer->async_wait(
          [this, id, name = PeerName(peer)](const boost::system::error_code& ec) {
            if (ec) return;
            Finish(id, absl::DeadlineExceededError(
                           absl::StrCat("bulk request ", id, " to ", name, ": deadline exceeded")));
          });
      pending_[id] = std::move(p);
      ++stats_.requests;
    } else {
      ++stats_.errors;
      refused = found.status();
    }
  }
  if (!refused.ok()) {
    done(refused);  // outside the lock: `done` may call back into the client
    return 0;
  }
  FrameHeader header;
  header.kind = kind;
  header.request_id = id;
  socket->Send(header, std::string(), std::move(body), [this, id] {
    absl::MutexLock lock(&mu_);
    return pending_.contains(id);
  });
  return id;
}

void AsioClient::Cancel(uint64_t request_id) {
  Finish(request_id, absl::CancelledError(absl::StrCat("bulk request ", request_id,
                                                       " cancelled by the caller")));
}

void AsioClient::Finish(uint64_t id, absl::StatusOr<Received> result) {
  std::unique_ptr<Pending> p;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    p = std::move(it->second);
    pending_.erase(it);
    if (!result.ok()) ++stats_.errors;
  }
  p->timer->cancel();
  p->done(std::move(result));
}

void AsioClient::OnFrame(FramedSocket* socket, Frame frame) {
  const FrameHeader& h = frame.header;
  if (!h.answer()) {
    socket->Close(absl::DataLossError(
        absl::StrCat("bulk peer ", socket->peer(), " sent a request on a client connection")));
    return;
  }
  if (h.status != absl::StatusCode::kOk) {
    absl::Status error(h.status, absl::StrCat("bulk peer ", socket->peer(), ": ", frame.message));
    if (h.request_id == 0) {
      socket->Close(error);  // about the connection, not one request
    } else {
      Finish(h.request_id, error);
    }
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(h.request_id);
    if (it == pending_.end()) return;  // cancelled or timed out: the answer is dropped
    if (it->second->kind != h.kind) {
      socket->Close(absl::DataLossError(absl::StrCat("bulk peer ", socket->peer(),
                                                     " answered request ", h.request_id,
                                                     " with kind ", h.kind)));
      return;
    }
  }
  Finish(h.request_id, std::move(frame.body));
}

void AsioClient::OnClose(FramedSocket* socket, const absl::Status& why) {
  std::vector<uint64_t> ids;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [address, pool] : pools_) {
      for (auto& s : pool->sockets) {
        if (s.get() == socket) s.reset();  // the next request opens a new connection
      }
    }
    for (const auto& [id, p] : pending_) {
      if (p->socket == socket) ids.push_back(id);
    }
    closed_bytes_sent_ += socket->bytes_sent();
    closed_bytes_received_ += socket->bytes_received();
  }
  for (uint64_t id : ids) Finish(id, why);
}

TransportStats AsioClient::stats() {
  absl::MutexLock lock(&mu_);
  TransportStats s = stats_;
  s.bytes_sent = closed_bytes_sent_;
  s.bytes_received = closed_bytes_received_;
  for (const auto& [address, pool] : pools_) {
    for (const auto& socket : pool->sockets) {
      if (socket == nullptr) continue;
      s.bytes_sent += socket->bytes_sent();
      s.bytes_received += socket->bytes_received();
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Server

AsioServer::AsioServer(std::map<uint16_t, Handler> handlers, AsioOptions options)
    : handlers_(std::move(handlers)),
      options_(options),
      work_(std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
          io_.get_executor())),
      acceptor_(io_),
      accept_retry_(std::make_unique<asio::steady_timer>(io_)),
      handler_pool_(static_cast<size_t>(std::max(1, options.handler_threads))) {}

absl::StatusOr<std::unique_ptr<AsioServer>> AsioServer::Start(const std::string& host, int port,
                                                              std::map<uint16_t, Handler> handlers,
                                                              AsioOptions options) {
  auto s = std::unique_ptr<AsioServer>(new AsioServer(std::move(handlers), options));
  const std::string where = absl::StrCat(host.empty() ? "0.0.0.0" : host, ":", port);
  boost::system::error_code ec;
  tcp::endpoint endpoint(tcp::v4(), static_cast<uint16_t>(port));
  if (!host.empty()) {
    tcp::resolver resolver(s->io_);
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      return absl::UnavailableError(absl::StrCat("bulk transport cannot resolve ", where, ": ",
                                                 ec ? ec.message() : "no address"));
    }
    endpoint = results.begin()->endpoint();
  }
  s->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) s->acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s->acceptor_.bind(endpoint, ec);
  if (!ec) s->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("bulk transport cannot listen on ", where, ": ", ec.message()));
  }
  s->port_ = s->acceptor_.local_endpoint().port();
  if (!s->options_.token.empty()) {
    for (const std::string& name : common::CredentialHosts(host)) {
      s->hello_credentials_.push_back(
          common::AddressCredential(s->options_.token, absl::StrCat(name, ":", s->port_)));
    }
  }
  s->Accept();
  StartThreads(s->io_, options.io_threads, "gs-bulk-io", s->threads_);
  return s;
}

AsioServer::~AsioServer() { Shutdown(); }

void AsioServer::Accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](const boost::system::error_code& ec,
                                                        tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // No descriptor left (EMFILE / ENFILE) or a connection that died in the backlog: try
      // again in a moment rather than spin.
      {
        absl::MutexLock lock(&mu_);
        ++stats_.accept_errors;
      }
      accept_retry_->expires_after(std::chrono::milliseconds(100));
      accept_retry_->async_wait([this](const boost::system::error_code& wait_ec) {
        if (!wait_ec && acceptor_.is_open()) Accept();
      });
      return;
    }
    boost::system::error_code ignored;
    tcp::endpoint remote = socket.remote_endpoint(ignored);
    const std::string address = remote.address().to_string();
    std::string name = absl::StrCat(address, ":", remote.port());
    internal::SocketOptions socket_options{
        .max_frame_bytes = options_.max_frame_bytes,
        .frame_timeout = options_.frame_timeout,
        .socket_buffer_bytes = options_.socket_buffer_bytes,
        .max_first_frame_bytes = options_.token.empty() ? 0 : kMaxHelloBytes,
        .first_frame_timeout = options_.first_frame_timeout};
    auto session = std::make_shared<FramedSocket>(
        std::move(socket), FramedSocket::Role::kServer, std::move(name), socket_options);
    FramedSocket* raw = session.get();
    std::weak_ptr<FramedSocket> weak = session;
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return;
      int& from_address = sessions_per_address_[address];
      const bool all_full = std::ssize(sessions_) >= options_.max_connections;
      if (all_full || from_address >= options_.max_connections_per_address) {
        // At a cap, a connection that has not completed a single frame (a stalled or idle one:
        // what an attacker holds) makes room for the new one; connections that have made
        // requests (peers at work) are never closed for it. Without such a victim the new
        // connection is shed, and its descriptor freed at once.
        // The oldest such one: a stalled connection has been there longer than a peer's fresh
        // one, which completes its first frame within milliseconds.
        std::shared_ptr<FramedSocket> victim;
        uint64_t victim_seq = 0;
        for (const auto& [other, other_weak] : sessions_) {
          const Accepted& a = accepted_[other];
          if (evicted_.contains(other) || (!all_full && a.address != address) ||
              (victim != nullptr && a.seq > victim_seq)) {
            continue;
          }
          std::shared_ptr<FramedSocket> s = other_weak.lock();
          if (s == nullptr || s->frames_read() > 0) continue;
          victim = std::move(s);
          victim_seq = a.seq;
        }
        ++stats_.connections_refused;
        if (victim == nullptr) {
          if (from_address == 0) sessions_per_address_.erase(address);
          session->Close(absl::ResourceExhaustedError("bulk transport: too many connections"));
          Accept();
          return;
        }
        evicted_.insert(victim.get());
        victim->Close(absl::ResourceExhaustedError(
            "bulk transport: too many connections; this one had sent no frame"));
      }
      ++from_address;
      sessions_[raw] = weak;
      accepted_[raw] = {address, ++accept_seq_};
    }
    session->Start(
        [this, weak, authenticated = std::make_shared<bool>(options_.token.empty())](
            Frame frame) {
          if (auto s = weak.lock()) Serve(s, std::move(frame), authenticated.get());
        },
        [this, raw, address](const absl::Status&) {
          absl::MutexLock lock(&mu_);
          closed_bytes_sent_ += raw->bytes_sent();
          closed_bytes_received_ += raw->bytes_received();
          sessions_.erase(raw);
          accepted_.erase(raw);
          evicted_.erase(raw);
          auto it = sessions_per_address_.find(address);
          if (it != sessions_per_address_.end() && --it->second <= 0) {
            sessions_per_address_.erase(it);
          }
        });
    // The session lives through the callbacks its socket operations hold.
    Accept();
  });
}

void AsioServer::Serve(const std::shared_ptr<FramedSocket>& socket, Frame frame,
                       bool* authenticated) {
  const FrameHeader h = frame.header;
  if (h.kind == kHelloKind && !h.answer()) {
    if (*authenticated) return;  // no token required, or already shown
    const absl::string_view shown =
        frame.body.arrays.size() == 1
            ? absl::string_view(frame.body.arrays[0].data(), frame.body.arrays[0].size())
            : absl::string_view();
    bool ok = false;
    for (const std::string& c : hello_credentials_) ok |= common::ConstantTimeEquals(c, shown);
    if (ok && !shown.empty()) {
      *authenticated = true;
      return;
    }
  }
  if (!*authenticated) {
    {
      absl::MutexLock lock(&mu_);
      ++stats_.errors;
    }
    socket->RefuseAndClose(
        absl::UnauthenticatedError(
            h.kind == kHelloKind
                ? "bulk transport: wrong job token (docs/SECURITY.md)"
                : "bulk transport: this server requires the job token first (docs/SECURITY.md)"),
        h.request_id, h.kind);
    return;
  }
  auto handler = handlers_.find(h.kind);
  if (h.answer() || handler == handlers_.end()) {
    {
      absl::MutexLock lock(&mu_);
      ++stats_.errors;
    }
    std::vector<std::string> kinds;
    for (const auto& [kind, unused] : handlers_) kinds.push_back(std::to_string(kind));
    socket->RefuseAndClose(
        absl::InvalidArgumentError(
            h.answer() ? std::string("an answer frame sent to a server")
                       : absl::StrCat("unknown request kind ", h.kind, " (this server serves ",
                                      absl::StrJoin(kinds, ", "), ")")),
        h.request_id, h.kind);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.requests;
  }
  std::weak_ptr<FramedSocket> weak = socket;
  Reply reply = [this, weak, h](absl::StatusOr<std::unique_ptr<Body>> result) {
    std::shared_ptr<FramedSocket> s = weak.lock();
    if (s == nullptr) return;  // the client went away
    FrameHeader answer;
    answer.kind = h.kind;
    answer.request_id = h.request_id;
    answer.flags = kFlagAnswer;
    if (result.ok() && *result != nullptr) {
      uint64_t bytes = 0;
      for (const absl::Span<const char>& a : (*result)->Arrays()) bytes += a.size() + 8;
      if (bytes > options_.max_frame_bytes) {
        result = absl::ResourceExhaustedError(
            absl::StrCat("answer of ", bytes, " bytes exceeds the maximum frame size (",
                         options_.max_frame_bytes, " bytes)"));
      }
    }
    if (!result.ok()) {
      {
        absl::MutexLock lock(&mu_);
        ++stats_.errors;
      }
      answer.status = result.status().code();
      s->Send(answer, std::string(result.status().message()), nullptr);
      return;
    }
    s->Send(answer, std::string(), *std::move(result));
  };
  asio::post(handler_pool_, [fn = &handler->second, body = std::move(frame.body),
                             reply = std::move(reply)]() mutable {
    static thread_local const bool named = (NameThisThread("gs-bulk-serve"), true);
    (void)named;
    (*fn)(std::move(body), std::move(reply));
  });
}

void AsioServer::Shutdown() {
  std::vector<std::shared_ptr<FramedSocket>> sessions;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [raw, weak] : sessions_) {
      if (auto s = weak.lock()) sessions.push_back(s);
    }
  }
  std::promise<void> closed;
  asio::post(io_, [this, &closed] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    accept_retry_->cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  for (auto& s : sessions) s->Close(absl::CancelledError("bulk transport server shutting down"));
  sessions.clear();
  handler_pool_.join();
  work_.reset();
  for (std::thread& t : threads_) t.join();
}

TransportStats AsioServer::stats() {
  absl::MutexLock lock(&mu_);
  TransportStats s = stats_;
  s.bytes_sent = closed_bytes_sent_;
  s.bytes_received = closed_bytes_received_;
  for (const auto& [raw, weak] : sessions_) {
    if (auto socket = weak.lock()) {
      s.bytes_sent += socket->bytes_sent();
      s.bytes_received += socket->bytes_received();
    }
  }
  return s;
}

}  // namespace graphshard::transport
