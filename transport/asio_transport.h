#ifndef GRAPHSHARD_TRANSPORT_ASIO_TRANSPORT_H_
#define GRAPHSHARD_TRANSPORT_ASIO_TRANSPORT_H_

// The bulk transport over TCP with Boost.Asio (docs/TRANSPORT.md): a few persistent
// connections per peer, frames of raw arrays (transport/frame.h), scatter-gather writes,
// TCP_NODELAY. Both classes are thread-safe.

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "transport/transport.h"

namespace graphshard::transport {

namespace internal {
class FramedSocket;
struct Frame;
}  // namespace internal

struct AsioOptions {
  // Largest payload of one frame either way; bigger ones are refused (default: gRPC's 1 GiB
  // message limit, rpc/options.h).
  uint64_t max_frame_bytes = uint64_t{1} << 30;
  // Once a frame's header has arrived, the rest must arrive within this, or the connection is
  // closed (a peer stalled mid-frame frees its connection even when no caller waits).
  absl::Duration frame_timeout = absl::Seconds(60);
  // Server: a connection must complete its first frame (the hello with a token, else its
  // first request) within this of being accepted (an idle or slow connection frees its
  // descriptor).
  absl::Duration first_frame_timeout = absl::Seconds(10);
  // Server: connections held at once, in all and from one IP address. At a cap, a held
  // connection that has not completed a frame yet is closed to make room; if every held one
  // has, the new one is closed as soon as it is accepted (docs/SECURITY.md: no client can take
  // every descriptor, nor keep a peer at work out).
  int max_connections = 512;
  int max_connections_per_address = 64;
  int connections_per_peer = 2;  // client: requests are spread round-robin over these
  int io_threads = 2;            // threads running the sockets
  int handler_threads = 4;       // server: threads running the handlers
  int socket_buffer_bytes = 0;   // SO_SNDBUF/SO_RCVBUF; 0 = kernel autotuning (docs/TRANSPORT.md)
  // The job token ("" = none). Client: the first frame (kHelloKind) of every connection
  // carries the credential for the address dialled (common::AddressCredential), never the token.
  // Server: a connection must open with a hello carrying the credential for this server's port
  // (compared in constant time) before any request is served; otherwise the connection is
  // answered UNAUTHENTICATED and closed, and its first frame may be no larger than
  // kMaxHelloBytes.
  std::string token;
};

class AsioClient final : public Client {
 public:
  explicit AsioClient(AsioOptions options = {});
  // Fails the requests still waiting with Cancelled, closes the connections, joins its threads.
  ~AsioClient() override;

  uint64_t Request(const Endpoint& peer, uint16_t kind, std::unique_ptr<Body> body,
                   absl::Time deadline, ResponseCallback done) override;
  void Cancel(uint64_t request_id) override;
  TransportStats stats();

 private:
  struct Pending;
  struct Pool;
  // Removes the request and calls its `done` with `result`, unless it already finished.
  void Finish(uint64_t id, absl::StatusOr<Received> result);
  absl::StatusOr<std::shared_ptr<internal::FramedSocket>> Connection(const Endpoint& peer,
                                                                     absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnFrame(internal::FramedSocket* socket, internal::Frame frame);
  void OnClose(internal::FramedSocket* socket, const absl::Status& why);

  const AsioOptions options_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Pool>> pools_ ABSL_GUARDED_BY(mu_);
  TransportStats stats_ ABSL_GUARDED_BY(mu_);
  int64_t closed_bytes_sent_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t closed_bytes_received_ ABSL_GUARDED_BY(mu_) = 0;
};

class AsioServer final {
 public:
  // Binds `host`:`port` (port 0 = any free port; host "" or "0.0.0.0" = every interface) and
  // serves `handlers` (kind -> handler). Unavailable naming the address if it cannot bind.
  static absl::StatusOr<std::unique_ptr<AsioServer>> Start(const std::string& host, int port,
                                                           std::map<uint16_t, Handler> handlers,
                                                           AsioOptions options = {});
  // Shutdown().
  ~AsioServer();
  int port() const { return port_; }
  // Stops accepting, closes every connection, waits for running handlers. Idempotent.
  void Shutdown();
  TransportStats stats();

 private:
  AsioServer(std::map<uint16_t, Handler> handlers, AsioOptions options);
  void Accept();
  // `authenticated`: the connection's hello was accepted (or no token is required); only the
  // socket's strand touches it.
  void Serve(const std::shared_ptr<internal::FramedSocket>& socket, internal::Frame frame,
             bool* authenticated);

  const std::map<uint16_t, Handler> handlers_;
  const AsioOptions options_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  boost::asio::ip::tcp::acceptor acceptor_;
  // After an accept error (no descriptor left: EMFILE), the next accept waits a little.
  std::unique_ptr<boost::asio::steady_timer> accept_retry_;
  boost::asio::thread_pool handler_pool_;
  std::vector<std::thread> threads_;
  int port_ = 0;
  // AddressCredential(token, name:port_) for every name of the bound host
  // (common::CredentialHosts); set once in Start.
  std::vector<std::string> hello_credentials_;
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::map<internal::FramedSocket*, std::weak_ptr<internal::FramedSocket>> sessions_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> sessions_per_address_ ABSL_GUARDED_BY(mu_);  // by remote IP
  struct Accepted {
    std::string address;  // remote IP
    uint64_t seq = 0;     // accept order
  };
  std::map<internal::FramedSocket*, Accepted> accepted_ ABSL_GUARDED_BY(mu_);
  uint64_t accept_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // Closed to make room at a cap, not yet gone (counted until their close callback runs).
  std::set<internal::FramedSocket*> evicted_ ABSL_GUARDED_BY(mu_);
  TransportStats stats_ ABSL_GUARDED_BY(mu_);
  int64_t closed_bytes_sent_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t closed_bytes_received_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphshard::transport

#endif  // GRAPHSHARD_TRANSPORT_ASIO_TRANSPORT_H_
