#include "rpc/channel.h"

#include <grpc/grpc_security.h>
#include <grpcpp/support/client_interceptor.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/secret.h"
#include "rpc/security.h"

namespace graphshard::rpc {
namespace {

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const RpcOptions& options) {
  switch (options.credentials) {
    case CredentialsKind::kInsecure:
      return grpc::InsecureChannelCredentials();
    case CredentialsKind::kTls: {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = options.tls.ca_pem;
      if (options.tls.mutual) {
        ssl.pem_cert_chain = options.tls.cert_pem;
        ssl.pem_private_key = options.tls.key_pem;
      }
      return grpc::SslCredentials(ssl);
    }
  }
  return grpc::InsecureChannelCredentials();  // unreachable: every kind is handled above
}

// Adds the job's credential to every call of a channel: one interceptor rather than a line at
// each call site, so no call (health checks, streams, peers' calls) can go out without it. An
// interceptor rather than gRPC call credentials: those are only sent over TLS, and a job may
// run its token over plaintext (docs/SECURITY.md). What goes out is the credential for the port
// dialled (common::AddressCredential: host and port), never the token itself: an address that
// is not the job's server (a bad registry entry) learns nothing it could use at another address.
class TokenInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit TokenInterceptor(const std::string* header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace(kTokenMetadataKey, *header_);
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;  // owned by the factory, which the channel keeps
};

class TokenInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  TokenInterceptorFactory(const std::string& token, const std::string& address)
      : header_(absl::StrCat("Bearer ", common::AddressCredential(token, address))) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* /*info*/) override {
    return new TokenInterceptor(&header_);
  }

 private:
  const std::string header_;
};

// The server side of the token: gRPC core's auth metadata processor runs for every call before
// any handler (our services, health, reflection alike) and fails it with UNAUTHENTICATED. Set
// on the core credentials directly, because the C++ wrapper refuses a processor on plaintext
// ports (it asserts), and a job may use its token without TLS. Accepted: the credential for a
// port these credentials bound (what graphshard clients send), or the token itself (what an
// operator's tool such as grpcurl sends).
class TokenCheck {
 public:
  explicit TokenCheck(const std::string& token)
      : token_(token), token_header_(absl::StrCat("Bearer ", token)) {}
  // Called by AddPortToServer once `addr` ("host:port" as asked) is bound at `port`, before the
  // server serves a call: the credentials of every name of that host (common::CredentialHosts).
  void AddPort(absl::string_view addr, int port) {
    absl::MutexLock lock(&mu_);
    for (const std::string& host : common::CredentialHosts(common::HostOfAddress(addr))) {
      port_headers_.push_back(absl::StrCat(
          "Bearer ", common::AddressCredential(token_, absl::StrCat(host, ":", port))));
    }
  }
  bool Accepts(absl::string_view value) const {
    absl::MutexLock lock(&mu_);
    bool ok = common::ConstantTimeEquals(token_header_, value);
    for (const std::string& h : port_headers_) ok |= common::ConstantTimeEquals(h, value);
    return ok;
  }

 private:
  const std::string token_;
  const std::string token_header_;
  mutable absl::Mutex mu_;
  std::vector<std::string> port_headers_ ABSL_GUARDED_BY(mu_);
};

void ProcessToken(void* state, grpc_auth_context* /*context*/, const grpc_metadata* md,
                  size_t num_md, grpc_process_auth_metadata_done_cb cb, void* user_data) {
  const auto* check = static_cast<const TokenCheck*>(state);
  bool ok = false;
  for (size_t i = 0; i < num_md; ++i) {
    const absl::string_view key(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(md[i].key)),
                                GRPC_SLICE_LENGTH(md[i].key));
    if (key != kTokenMetadataKey) continue;
    const absl::string_view value(
        reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(md[i].value)),
        GRPC_SLICE_LENGTH(md[i].value));
    ok = check->Accepts(value);
    break;
  }
  if (ok) {
    cb(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
  } else {
    cb(user_data, nullptr, 0, nullptr, 0, GRPC_STATUS_UNAUTHENTICATED,
       "missing or wrong job token (docs/SECURITY.md)");
  }
}

void DestroyTokenCheck(void* state) { delete static_cast<TokenCheck*>(state); }

// ServerCredentials over core credentials we made (plaintext or TLS) with the token processor.
// AddPortToServer is the one hook grpc::Server uses (Server::AddListeningPort).
class TokenServerCredentials final : public grpc::ServerCredentials {
 public:
  TokenServerCredentials(grpc_server_credentials* core, const std::string& token)
      : core_(core), check_(new TokenCheck(token)) {
    grpc_server_credentials_set_auth_metadata_processor(
        core_, grpc_auth_metadata_processor{&ProcessToken, &DestroyTokenCheck, check_});
  }
  ~TokenServerCredentials() override { grpc_server_credentials_release(core_); }
  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>& /*processor*/) override {
    // Ours is set at construction; nothing in graphshard sets another.
  }

 private:
  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    const int port = grpc_server_add_http2_port(server, addr.c_str(), core_);
    if (port > 0) check_->AddPort(addr, port);
    return port;
  }
  grpc_server_credentials* core_;
  TokenCheck* check_;  // owned by core_ (DestroyTokenCheck), which outlives this object's use
};

grpc_server_credentials* MakeCoreTlsCredentials(const TlsOptions& tls) {
  grpc_ssl_pem_key_cert_pair pair{tls.key_pem.c_str(), tls.cert_pem.c_str()};
  return grpc_ssl_server_credentials_create_ex(
      tls.ca_pem.c_str(), &pair, 1,
      tls.mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                 : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
      nullptr);
}

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const RpcOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // pings while a stream is quiet
  // A lost server is asked again within a second (gRPC's backoff grows to 120 s), so that one
  // restarted at the same address is found soon.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (options.credentials == CredentialsKind::kTls && !options.tls.server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls.server_name);
  }
  if (options.token.empty()) {
    return grpc::CreateCustomChannel(address, MakeChannelCredentials(options), args);
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<TokenInterceptorFactory>(options.token, address));
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address, MakeChannelCredentials(options), args, std::move(factories));
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const RpcOptions& options) {
  if (options.token.empty()) {
    if (options.credentials == CredentialsKind::kInsecure) {
      return grpc::InsecureServerCredentials();
    }
    grpc::SslServerCredentialsOptions ssl(
        options.tls.mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                           : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_root_certs = options.tls.ca_pem;
    ssl.pem_key_cert_pairs.push_back({options.tls.key_pem, options.tls.cert_pem});
    return grpc::SslServerCredentials(ssl);
  }
  grpc_server_credentials* core = options.credentials == CredentialsKind::kTls
                                      ? MakeCoreTlsCredentials(options.tls)
                                      : grpc_insecure_server_credentials_create();
  return std::make_shared<TokenServerCredentials>(core, options.token);
}
void ConfigureServerBuilder(grpc::ServerBuilder& builder, const std::string& listen,
                            const RpcOptions& options, int* selected_port) {
  builder.AddListeningPort(listen, MakeServerCredentials(options), selected_port);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // Ping clients too (a stopped trainer's stream is cancelled, freeing its slot), and accept
  // their keepalive pings (by default gRPC answers pings more often than every 5 minutes with
  // GOAWAY "too_many_pings").
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kMinKeepaliveMs / 2);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // No SO_REUSEPORT (gRPC sets it by default on Linux): another process of the same user could
  // otherwise bind the same port and receive a share of the connections meant for this server.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

}  // namespace graphshard::rpc
