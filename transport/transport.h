#ifndef GRAPHSHARD_TRANSPORT_TRANSPORT_H_
#define GRAPHSHARD_TRANSPORT_TRANSPORT_H_

// The bulk data plane's interface: request/response of raw arrays between servers, outside
// protobuf (docs/TRANSPORT.md). A request has a kind (what the server should do) and arrays;
// the answer is arrays or an error status. Implementations: AsioClient / AsioServer (TCP,
// transport/asio_transport.h). No gRPC, protobuf or Torch here.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace graphshard::transport {

// The arrays of an outgoing request or answer, and what keeps their memory alive: the transport
// holds the body until its bytes are written (also after the caller stopped waiting), and writes
// the spans as they are (scatter-gather, no serialisation copy).
class Body {
 public:
  virtual ~Body() = default;
  // Called once, when the frame is written; the spans must stay valid while the body lives.
  virtual std::vector<absl::Span<const char>> Arrays() const = 0;
};

// A body that owns its arrays.
class OwnedBody final : public Body {
 public:
  explicit OwnedBody(std::vector<std::vector<char>> arrays) : arrays_(std::move(arrays)) {}
  std::vector<absl::Span<const char>> Arrays() const override {
    return {arrays_.begin(), arrays_.end()};
  }

 private:
  std::vector<std::vector<char>> arrays_;
};

// Received arrays, each in its own buffer (the receiver may move a large one, e.g. feature
// rows, into its result without a copy).
struct Received {
  std::vector<std::vector<char>> arrays;
};

// Who a request goes to: "host:port", and a name for error messages ("part 1").
struct Endpoint {
  std::string address;
  std::string name;
};

using ResponseCallback = std::function<void(absl::StatusOr<Received>)>;

class Client {
 public:
  virtual ~Client() = default;
  // Sends `body` as a request of `kind` (> 0) to `peer`, and calls `done` exactly once, on a
  // transport thread (or on this one, before returning, for an immediate failure): with the
  // answer's arrays; with the handler's error status; DeadlineExceeded at `deadline`;
  // Cancelled after Cancel(id); Unavailable when the peer cannot be reached or the connection
  // breaks (e.g. the peer died mid-frame); DataLoss for a malformed answer;
  // InvalidArgument for a request over the maximum frame size. Every message names the peer
  // (name and address). Returns the request id for Cancel. Thread-safe.
  virtual uint64_t Request(const Endpoint& peer, uint16_t kind, std::unique_ptr<Body> body,
                           absl::Time deadline, ResponseCallback done) = 0;
  // The request's `done` gets Cancelled now, unless it already ran (then a no-op); an answer
  // arriving later is read and dropped. Thread-safe.
  virtual void Cancel(uint64_t request_id) = 0;
};

// Answers a request exactly once, from any thread: a body, or an error status that the client
// receives with its code and message.
using Reply = std::function<void(absl::StatusOr<std::unique_ptr<Body>>)>;
// Serves one kind of request. Runs on the server's handler threads (not its I/O threads).
using Handler = std::function<void(Received request, Reply reply)>;

// Counters of one client or server (what crossed its sockets, frames included).
struct TransportStats {
  int64_t requests = 0;  // sent (client) or served (server)
  int64_t errors = 0;    // error answers (both sides) and refused frames (server)
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  // Server: connections closed because max_connections (or the per-address cap) was reached
  // (a new one shed, or a held one that had completed no frame closed to make room), and
  // accept calls that failed (e.g. no descriptor left).
  int64_t connections_refused = 0;
  int64_t accept_errors = 0;
};

}  // namespace graphshard::transport

#endif  // GRAPHSHARD_TRANSPORT_TRANSPORT_H_
