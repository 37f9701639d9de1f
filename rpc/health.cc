#include "rpc/health.h"

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "rpc/status.h"

namespace graphshard::rpc {

absl::Status CheckHealth(const std::shared_ptr<grpc::Channel>& channel, absl::Time deadline,
                         const HealthCheckOptions& options) {
  std::unique_ptr<grpc::health::v1::Health::Stub> stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  context.set_wait_for_ready(options.wait_for_ready);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat("not SERVING (status ", static_cast<int>(response.status()), ")"));
  }
  return absl::OkStatus();
}

}  // namespace graphshard::rpc
