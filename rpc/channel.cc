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
}

}  // namespace graphshard::rpc
