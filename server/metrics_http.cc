#include "server/metrics_http.h"

#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/secret.h"

namespace graphshard::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::chrono::steady_clock::duration Chrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

// One connection: read one request (bounded, with a deadline), answer it, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const std::function<std::string()>& render,
          const MetricsHttpOptions& options, int* open)
      : stream_(std::move(socket)), render_(render), options_(options), open_(open) {
    ++*open_;
  }
  ~Session() { --*open_; }

  void Start() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    parser_->body_limit(static_cast<uint64_t>(options_.max_body_bytes));
    stream_.expires_after(Chrono(options_.io_timeout));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec == beast::error::timeout || ec == http::error::end_of_stream ||
        ec == asio::error::operation_aborted) {
      return;  // closed or too slow: drop the connection
    }
    if (ec) {  // malformed or over the limits
      Reply(http::status::bad_request, absl::StrCat("bad request: ", ec.message(), "\n"));
      return;
    }
    const http::request<http::string_body>& req = parser_->get();
    absl::string_view target(req.target().data(), req.target().size());
    target = target.substr(0, target.find('?'));
    if (!options_.token.empty()) {
      auto auth = req.find(http::field::authorization);
      const absl::string_view got = auth == req.end()
                                        ? absl::string_view()
                                        : absl::string_view(auth->value().data(),
                                                            auth->value().size());
      if (!common::ConstantTimeEquals(absl::StrCat("Bearer ", options_.token), got)) {
        Reply(http::status::unauthorized, "missing or wrong job token (docs/SECURITY.md)\n");
        return;
      }
    }
    if (target != "/metrics") {
      Reply(http::status::not_found, "not found: only GET /metrics is served\n");
    } else if (req.method() != http::verb::get) {
      Reply(http::status::method_not_allowed, "only GET /metrics is served\n");
    } else {
      Reply(http::status::ok, render_());
    }
  }

  void Reply(http::status status, std::string body) {
    auto res = std::make_shared<http::response<http::string_body>>(status, 11);
    res->set(http::field::server, "graphshard-server");
    res->set(http::field::content_type, status == http::status::ok
                                            ? "text/plain; version=0.0.4; charset=utf-8"
                                            : "text/plain; charset=utf-8");
    if (status == http::status::method_not_allowed) res->set(http::field::allow, "GET");
    if (status == http::status::unauthorized) res->set(http::field::www_authenticate, "Bearer");
    res->keep_alive(false);
    res->body() = std::move(body);
    res->prepare_payload();
    stream_.expires_after(Chrono(options_.io_timeout));
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code, size_t) {
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const std::function<std::string()>& render_;
  const MetricsHttpOptions& options_;
  int* open_;
};

// "host:port" -> (host, port); brackets removed from an IPv6 host; "" host = every interface.
absl::StatusOr<std::pair<std::string, uint16_t>> SplitListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-listen '", listen, "': expected HOST:PORT with a port in 0..65535"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  return std::pair{host, static_cast<uint16_t>(port)};
}

}  // namespace

struct MetricsHttpServer::Impl {
  Impl(std::function<std::string()> r, MetricsHttpOptions o)
      : render(std::move(r)), options(o), acceptor(io) {}

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        if (open < options.max_connections) {
          std::make_shared<Session>(std::move(socket), render, options, &open)->Start();
        }  // else: the socket closes as it goes out of scope
      }
      Accept();
    });
  }

  // Declared before io: sessions freed with io's pending handlers still use them.
  std::function<std::string()> render;
  MetricsHttpOptions options;
  int open = 0;  // sessions alive; touched on the io thread only
  asio::io_context io{1};
  tcp::acceptor acceptor;
  std::thread thread;
};

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, std::function<std::string()> render,
    const MetricsHttpOptions& options) {
  absl::StatusOr<std::pair<std::string, uint16_t>> split = SplitListen(listen);
  if (!split.ok()) return split.status();
  auto impl = std::make_unique<Impl>(std::move(render), options);
  beast::error_code ec;
  tcp::resolver resolver(impl->io);
  const tcp::resolver::results_type found =
      resolver.resolve(split->first, std::to_string(split->second),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics-listen '", listen, "': host '",
                                                   split->first, "': ", ec.message()));
  }
  const tcp::endpoint endpoint = found.begin()->endpoint();
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-listen '", listen, "': cannot listen: ", ec.message()));
  }
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(std::move(impl)));
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsHttpServer::~MetricsHttpServer() {
  impl_->io.stop();
  impl_->thread.join();
  // Sessions still waiting are freed with the io_context's pending handlers, their sockets
  // closed; the acceptor closes with impl_.
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

int MetricsHttpServer::port() const {
  beast::error_code ec;
  const tcp::endpoint e = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : e.port();
}

}  // namespace graphshard::server
