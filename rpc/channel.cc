#include "rpc/channel.h"

namespace graphshard::rpc {
namespace {

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const RpcOptions& options) {
  switch (options.credentials) {
    case CredentialsKind::kInsecure:
      return grpc::InsecureChannelCredentials();
  }
  return grpc::InsecureChannelCredentials();  // unreachable: every kind is handled above
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
  return grpc::CreateCustomChannel(address, MakeChannelCredentials(options), args);
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const RpcOptions& options) {
  switch (options.credentials) {
    case CredentialsKind::kInsecure:
      return grpc::InsecureServerCredentials();
  }
  return grpc::InsecureServerCredentials();  // unreachable: every kind is handled above
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
}

}  // namespace graphshard::rpc
