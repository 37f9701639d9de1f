#ifndef GRAPHSHARD_SERVER_METRICS_HTTP_H_
#define GRAPHSHARD_SERVER_METRICS_HTTP_H_

// The Prometheus endpoint of a server (--metrics-listen): a small HTTP/1.1 server on one thread
// (Boost.Beast over Asio) that answers GET /metrics with the text `render` returns. Anything
// else gets 404 (another path) or 405 (another method on /metrics); every connection carries one
// request (Connection: close). Requests are bounded (headers and body), every read and write has
// a deadline, and at most `max_connections` are open at once (more are closed on accept), so a
// slow or hostile client costs one socket for at most the deadline and never blocks a scrape
// for long, nor the gRPC server at all.
//
// Thread-safety: `render` runs on the server's own thread, one call at a time; it must be safe
// to call from there while the rest of the process runs. The destructor stops the thread and
// closes every connection.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace graphshard::server {

struct MetricsHttpOptions {
  absl::Duration io_timeout = absl::Seconds(5);  // reading a request, writing the answer
  int max_header_bytes = 8 << 10;
  int max_body_bytes = 1 << 10;
  int max_connections = 16;
  // The job token ("" = none): with one, a request must carry "Authorization: Bearer <token>"
  // (Prometheus: authorization.credentials_file), compared in constant time, or it gets 401;
  // the endpoint shows Stats, which need the token over gRPC too (docs/SECURITY.md).
  std::string token;
};

class MetricsHttpServer {
 public:
  // Binds `listen` ("host:port", "[v6]:port", ":port" = every IPv4 interface; port 0 = any free
  // port) and starts serving. InvalidArgument naming `listen` when it is malformed, Unavailable
  // when it cannot be bound (the reason included).
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, std::function<std::string()> render,
      const MetricsHttpOptions& options = {});
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const;

 private:
  struct Impl;
  explicit MetricsHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_METRICS_HTTP_H_
