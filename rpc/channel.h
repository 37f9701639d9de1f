#ifndef GRAPHSHARD_RPC_CHANNEL_H_
#define GRAPHSHARD_RPC_CHANNEL_H_

// The one place where graphshard makes gRPC channels and server ports: every client (trainer,
// peer servers, graphshard-health, tests) and every server gets its credentials and message
// size limit from one RpcOptions, so the two ends cannot drift apart.
// Thread-safe: free functions without shared state.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "rpc/options.h"

namespace graphshard::rpc {

// A channel to "host:port" (connects lazily; never fails here).
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const RpcOptions& options = {});

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const RpcOptions& options = {});

// Adds a listening port on `listen` ("host:port", port 0 = any free one, written to
// *selected_port once the server starts; 0 if binding failed) with the options' credentials,
// and sets the builder's message size limits.
void ConfigureServerBuilder(grpc::ServerBuilder& builder, const std::string& listen,
                            const RpcOptions& options, int* selected_port);

}  // namespace graphshard::rpc

#endif  // GRAPHSHARD_RPC_CHANNEL_H_
