#ifndef GRAPHSHARD_SERVER_PARTITION_SERVICE_H_
#define GRAPHSHARD_SERVER_PARTITION_SERVICE_H_

// The gRPC service: proto -> engine call -> proto, plus stream bookkeeping (limits, shared
// memory, stats). Thread-safe.

#include <atomic>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/executor.h"
#include "proto/graphshard.grpc.pb.h"
#include "server/admission.h"
#include "server/deferred_unlink.h"
#include "server/engine/layer_tables.h"
#include "server/engine/local_part.h"
#include "server/engine/peers.h"
#include "server/ring_registry.h"
#include "server/server_stats.h"
#include "server/shm_batch_writer.h"
#include "shm/host_proof.h"

namespace graphshard::server {

struct ServiceOptions {
  int max_streams = 64;  // concurrent StreamBatches; more get RESOURCE_EXHAUSTED
  // Streams per client (admission.h); a stream waiting for its client this long is idle, and
  // reclaimed when a new stream needs its slot.
  int max_client_streams = 32;
  absl::Duration stream_idle = absl::ZeroDuration();  // zero: the server's --stall-timeout-s
  // What the requests of the server, and of one client, may reserve together (admission.h).
  int64_t memory_budget_bytes = int64_t{1} << 40;
  int64_t client_memory_bytes = int64_t{1} << 40;
  // How long a request queues for the server budget (or until its deadline) before it is
  // refused (admission.h).
  absl::Duration memory_wait = absl::Seconds(10);
  int prefetch = 4;      // batches built ahead per stream
  bool shared_memory = true;  // same-host clients get batches through POSIX shm
  std::string host_id;        // compared with the client's to decide on shared memory
  // The same-host proof a client must echo to get shared memory (shm/host_proof.h); null: no
  // client gets shared memory. Must outlive the service.
  const shm::HostProof* host_proof = nullptr;
  int bulk_port = 0;          // published in Metadata.bulk_port (0 = no bulk transport)
  int metrics_port = 0;       // published in Metadata.metrics_port (0 = no HTTP endpoint)
  std::string shm_prefix;     // segment names start with this (shm::NewShmPrefix())
  std::string token;          // the job token: GetMetadata proves it (Metadata.job_proof)
  // Stream rings kept for clients between their streams (ring_registry.h): dropped after this
  // long unused, and beyond this many unused ones (oldest first). Each holds its segments
  // (about prefetch + the client's shm_ring batches, ~128 MB each on ogbn-products).
  absl::Duration ring_idle = absl::Minutes(2);
  // How long a client has to open a one-shot segment handed to it (it opens it as it reads
  // the message) before the server unlinks the name anyway (server/deferred_unlink.h).
  absl::Duration shm_name_grace = absl::Seconds(60);
  int max_idle_rings = 8;
  // The largest answer sent inline (gRPC's message limit less framing; 0 = unchecked): a
  // request whose answer bound exceeds it is refused before any work (request_cost.h).
  int64_t max_answer_bytes = 0;
};

class PartitionServiceImpl final : public v1::PartitionService::Service {
 public:
  // `local`, `peers`, `executor` and `stats` must outlive the service.
  PartitionServiceImpl(const engine::LocalPart& local, engine::Peers& peers,
                       common::Executor& executor, ServerStats& stats, ServiceOptions options)
      : local_(local), peers_(peers), executor_(executor), stats_(stats),
        options_(std::move(options)), tables_(local),
        rings_(options_.shm_prefix, &shm_counter_, options_.ring_idle, options_.max_idle_rings),
        admission_(AdmissionOptions{.max_streams = options_.max_streams,
                                    .max_client_streams = options_.max_client_streams,
                                    .stream_idle = options_.stream_idle > absl::ZeroDuration()
                                                       ? options_.stream_idle
                                                       : absl::Seconds(30),
                                    .memory_budget_bytes = options_.memory_budget_bytes,
                                    .client_memory_bytes = options_.client_memory_bytes,
                                    .memory_wait = options_.memory_wait}),
        deferred_unlinks_(options_.shm_name_grace) {}

  grpc::Status GetMetadata(grpc::ServerContext* context, const v1::GetMetadataRequest* request,
                           v1::Metadata* response) override;
  grpc::Status GetSplit(grpc::ServerContext* context, const v1::GetSplitRequest* request,
                        v1::GetSplitResponse* response) override;
  grpc::Status SampleOneHop(grpc::ServerContext* context, const v1::SampleOneHopRequest* request,
                            v1::SampleOneHopResponse* response) override;
  grpc::Status GatherFeatures(grpc::ServerContext* context,
                              const v1::GatherFeaturesRequest* request,
                              v1::GatherFeaturesResponse* response) override;
  grpc::Status SampleMinibatch(grpc::ServerContext* context,
                               const v1::SampleMinibatchRequest* request,
                               v1::Minibatch* response) override;
  grpc::Status StreamBatches(grpc::ServerContext* context,
                             const v1::StreamBatchesRequest* request,
                             grpc::ServerWriter<v1::Minibatch>* writer) override;
  grpc::Status GetStats(grpc::ServerContext* context, const v1::GetStatsRequest* request,
                        v1::Stats* response) override;
  grpc::Status PutRows(grpc::ServerContext* context, const v1::PutRowsRequest* request,
                       v1::PutRowsResponse* response) override;
  grpc::Status DropTable(grpc::ServerContext* context, const v1::DropTableRequest* request,
                         v1::DropTableResponse* response) override;
  grpc::Status GetOrigIds(grpc::ServerContext* context, const v1::GetSplitRequest* request,
                          v1::GetSplitResponse* response) override;

 private:
  // The streaming part of StreamBatches, once admitted (partition_service_stream.cc).
  absl::Status RunStream(grpc::ServerContext* context, const v1::StreamBatchesRequest& request,
                         grpc::ServerWriter<v1::Minibatch>* writer, Admission::StreamSlot& slot);
  grpc::Status Gather(grpc::ServerContext& context, const v1::GatherFeaturesRequest& request,
                      v1::GatherFeaturesResponse* response, CallTimer& timer);
  // Whether a client that says `host_id` and sends `proof` gets shared memory: the host ids
  // match and the proof is this server's secret.
  bool SameHost(const std::string& host_id, const std::string& proof) const;
  // How a stream's batches go out: shared memory for a same-host client (SameHost), in its
  // ring when it asks for one.
  ShmBatchWriter::Options WriterOptions(const v1::StreamBatchesRequest& request);

  const engine::LocalPart& local_;
  engine::Peers& peers_;
  common::Executor& executor_;
  ServerStats& stats_;
  const ServiceOptions options_;
  engine::LayerTables tables_;  // full-graph inference (layer_tables.h)
  std::atomic<int64_t> shm_counter_{0};
  RingRegistry rings_;
  Admission admission_;
  // Names handed to clients (one-shot segments, gather answers), unlinked after a grace.
  DeferredUnlinks deferred_unlinks_;
};

}  // namespace graphshard::server

#endif  // GRAPHSHARD_SERVER_PARTITION_SERVICE_H_
