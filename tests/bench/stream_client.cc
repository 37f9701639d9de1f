#include "tests/bench/stream_client.h"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "proto/graphshard.grpc.pb.h"
#include "rpc/channel.h"
#include "server/proto_convert.h"
#include "shm/host_proof.h"

namespace graphshard::bench {

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

double ProcessCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double ThreadCpuSeconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Totals StreamOnce(const StreamParams& f, const std::string& address,
                  const std::vector<int64_t>& seeds, bool shm, uint64_t shuffle_seed,
                  int num_batches, ClientRing* client,
                  const std::function<void(double)>& on_batch) {
  const double cpu0 = ThreadCpuSeconds();
  auto stub = v1::PartitionService::NewStub(rpc::MakeChannel(address));
  v1::StreamBatchesRequest r;
  r.set_seeds(server::ToBytes<int64_t>(seeds));
  r.set_batch_size(f.batch_size);
  r.set_shuffle(true);
  r.set_shuffle_seed(shuffle_seed);
  r.set_num_batches(num_batches > 0 ? num_batches : f.batches);
  for (int32_t x : f.fanouts) r.mutable_sampling()->add_fanouts(x);
  r.mutable_sampling()->set_feature_dtype(f.dtype);
  r.mutable_sampling()->set_without_features(f.without_features);
  std::string prefix;
  if (shm) {
    // A same-host client proves it (shm/host_proof.h): the proof named in GetMetadata.
    grpc::ClientContext mctx;
    mctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::Metadata md;
    if (stub->GetMetadata(&mctx, v1::GetMetadataRequest(), &md).ok()) {
      prefix = md.shm_prefix();
      r.set_client_host_id(md.host_id());
      r.set_client_host_proof(shm::ReadHostProof(md.host_proof_name()).value_or(""));
    }
  }
  r.set_shm_ring(f.ring ? 2 : 0);  // this client holds one batch at a time
  shm::ShmRingReader own;
  shm::ShmRingReader& ring = client != nullptr ? client->reader : own;
  if (client != nullptr) r.set_shm_ring_id(client->id);
  // The server names the segments it makes for this client for its key, and it checks them.
  const std::string key = client != nullptr ? client->key : rpc::NewNonce();
  r.set_shm_ring_key(key);
  uint64_t attached = 0;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  auto reader = stub->StreamBatches(&ctx, r);
  Totals t;
  v1::Minibatch m;
  volatile uint64_t sink = 0;
  double asked = Now();
  while (reader->Read(&m)) {
    if (on_batch) on_batch(Now() - asked);
    std::shared_ptr<const shm::ShmSegment> seg;  // the last batch's is released here
    if (m.shm_ring() && attached == 0) {
      attached = m.shm_ring_serial();
      ring.Attach(attached);
    }
    if (!m.shm_name().empty()) {
      if (absl::Status named = shm::CheckSegmentName(m.shm_name(), prefix, key); !named.ok()) {
        std::fprintf(stderr, "stream from %s: %s\n", address.c_str(),
                     std::string(named.message()).c_str());
        ctx.TryCancel();
        t.errors = 1;
        break;
      }
      auto opened = m.shm_ring() ? ring.Open(m.shm_name(), m.shm_size(), m.shm_ring_serial())
                                 : shm::ShmSegment::OpenAndUnlink(m.shm_name(), m.shm_size());
      if (!opened.ok()) {
        std::fprintf(stderr, "stream from %s: %s\n", address.c_str(),
                     std::string(opened.status().message()).c_str());
        ctx.TryCancel();  // else Finish waits for a server that waits for this reader
        t.errors = 1;
        break;
      }
      seg = *opened;
    }
    t.batches++;
    t.seeds += m.batch_size();
    for (const auto& e : m.edges()) t.edges += static_cast<int64_t>((seg ? e.src().shm_length() : e.src().data().size()) / 8);
    for (const auto& n : m.nodes()) {
      const char* p = seg ? seg->data() + n.features().shm_offset() : n.features().data().data();
      size_t len = seg ? n.features().shm_length() : n.features().data().size();
      for (size_t i = 0; i < len; i += 4096) sink = sink + static_cast<unsigned char>(p[i]);
      t.feature_bytes += static_cast<int64_t>(len);
    }
    asked = Now();
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) {
    std::fprintf(stderr, "stream from %s: %s\n", address.c_str(), s.error_message().c_str());
    t.errors = 1;
  }
  if (attached != 0) ring.Detach(attached);
  t.client_cpu_s = ThreadCpuSeconds() - cpu0;
  return t;
}

std::optional<v1::Stats> StatsAt(const std::string& address) {
  auto stub = v1::PartitionService::NewStub(rpc::MakeChannel(address));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::Stats stats;
  if (!stub->GetStats(&ctx, {}, &stats).ok()) return std::nullopt;
  return stats;
}

std::vector<int64_t> ClientShard(const std::vector<std::vector<int64_t>>& train, int n, int c) {
  const int k = static_cast<int>(train.size());
  const int p = c % k;
  const int of = (n - p + k - 1) / k, index = c / k;
  const size_t begin = train[p].size() * index / of, end = train[p].size() * (index + 1) / of;
  return std::vector<int64_t>(train[p].begin() + static_cast<std::ptrdiff_t>(begin),
                              train[p].begin() + static_cast<std::ptrdiff_t>(end));
}

}  // namespace graphshard::bench
