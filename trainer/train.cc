#include "trainer/train.h"

#include <torch/torch.h>

#include <chrono>
#include <deque>
#include <future>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "trainer/assignment.h"
#include "trainer/epoch_plan.h"
#include "trainer/sage_model.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {
namespace {

constexpr int kTrainStream = 0;
constexpr int kValStream = 1;
constexpr int kTestStream = 2;

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Shards {
  std::vector<ShardSeeds> train, val, test;
};

int64_t TotalSeeds(const std::vector<ShardSeeds>& shards) {
  int64_t n = 0;
  for (const ShardSeeds& s : shards) n += static_cast<int64_t>(s.ids.size());
  return n;
}

// This rank's share of each split (assignment.h), read from the servers that own them.
absl::StatusOr<Shards> LoadShards(ServerSet& servers, int rank, int world_size) {
  ASSIGN_OR_RETURN(std::vector<ServerShare> shares,
                   AssignServers(rank, world_size, servers.metadata.num_parts));
  Shards shards;
  for (const ServerShare& share : shares) {
    PartitionClient& client = *servers.clients[static_cast<size_t>(share.part)];
    for (auto [name, out] : {std::pair{"train", &shards.train}, std::pair{"val", &shards.val},
                             std::pair{"test", &shards.test}}) {
      ASSIGN_OR_RETURN(std::vector<int64_t> ids, client.GetSplit(name));
      absl::Span<const int64_t> chunk = ChunkOf(ids, share.chunk, share.num_chunks);
      out->push_back({share.part, std::vector<int64_t>(chunk.begin(), chunk.end())});
    }
  }
  return shards;
}

struct FetchJob {
  int part = 0;
  std::vector<int64_t> seeds;
  uint64_t sample_seed = 0;
};

// Keeps up to `depth` SampleMinibatch RPCs in flight and hands out the answers in job order,
// so sampling on the servers overlaps training here. Each RPC has its own deadline, so the
// destructor (which waits for calls in flight) is bounded.
class Prefetcher {
 public:
  Prefetcher(ServerSet& servers, std::vector<FetchJob> jobs, const TrainerOptions& options)
      : servers_(servers), options_(options), jobs_(std::move(jobs)) {
    for (int i = 0; i < options_.prefetch; ++i) Launch();
  }

  absl::StatusOr<MinibatchData> Next() {
    if (inflight_.empty()) return absl::InternalError("Prefetcher::Next past the last job");
    absl::StatusOr<MinibatchData> batch = inflight_.front().get();
    inflight_.pop_front();
    Launch();
    return batch;
  }

 private:
  void Launch() {
    if (next_ >= jobs_.size()) return;
    const FetchJob* job = &jobs_[next_++];
    PartitionClient* client = servers_.clients[static_cast<size_t>(job->part)].get();
    inflight_.push_back(std::async(std::launch::async, [this, job, client] {
      return client->SampleMinibatch(
          {job->seeds, options_.fanouts, options_.replace, job->sample_seed});
    }));
  }

  ServerSet& servers_;
  const TrainerOptions& options_;
  std::vector<FetchJob> jobs_;  // declared before inflight_: outlives the calls using it
  size_t next_ = 0;
  std::deque<std::future<absl::StatusOr<MinibatchData>>> inflight_;
};

// Batches of `batch` on the model input: row-normalised features when asked.
torch::Tensor ModelInput(const BatchTensors& t, const TrainerOptions& options) {
  if (!options.normalize_features) return t.x;
  return t.x / t.x.sum(1, /*keepdim=*/true).clamp_min(1);
}

struct EvalCounts {
  double correct = 0;
  double total = 0;
};

absl::StatusOr<EvalCounts> EvaluateSplit(GraphSage& model, ServerSet& servers,
                                         const std::vector<ShardSeeds>& shards,
                                         const TrainerOptions& options, int64_t epoch, int rank,
                                         int stream) {
  std::vector<PlannedBatch> plan = PlanEpoch(
      shards,
      {.batch_size = options.batch_size, .shuffle = false, .seed = options.seed, .epoch = epoch});
  std::vector<FetchJob> jobs;
  for (size_t s = 0; s < plan.size(); ++s) {
    jobs.push_back({plan[s].part, std::move(plan[s].seeds),
                    BatchSampleSeed(options.seed, epoch, rank, static_cast<int64_t>(s), stream)});
  }
  const size_t num_jobs = jobs.size();
  Prefetcher prefetch(servers, std::move(jobs), options);
  torch::NoGradGuard no_grad;
  model->eval();
  EvalCounts counts;
  for (size_t s = 0; s < num_jobs; ++s) {
    ASSIGN_OR_RETURN(MinibatchData batch, prefetch.Next());
    ASSIGN_OR_RETURN(BatchTensors t, ToTensors(batch, servers.metadata.num_classes));
    torch::Tensor logits =
        model->forward(ModelInput(t, options), t.edge_src, t.edge_dst).slice(0, 0, t.batch_size);
    counts.correct += logits.argmax(1).eq(t.y).sum().item<double>();
    counts.total += static_cast<double>(t.batch_size);
  }
  return counts;
}

struct EpochStats {
  double loss = 0;
  double train_acc = 0;
  double seeds_per_s = 0;  // summed over ranks
  double time_s = 0;       // slowest rank
  double local_seeds = 0;
  double local_time_s = 0;
  double fetch_wait_s = 0;  // this rank, waiting for minibatches (sampling not hidden)
};

absl::StatusOr<EpochStats> TrainEpoch(GraphSage& model, torch::optim::Adam& optimizer,
                                      ServerSet& servers, const std::vector<ShardSeeds>& train,
                                      const TrainerOptions& options, int64_t epoch,
                                      Communicator& comm) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<PlannedBatch> plan = PlanEpoch(
      train,
      {.batch_size = options.batch_size, .shuffle = true, .seed = options.seed, .epoch = epoch});
  // Every rank runs the same number of steps; ranks with fewer batches wrap around.
  int64_t steps = static_cast<int64_t>(plan.size());
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(&steps, 1), ReduceOp::kMax));
  if (steps == 0) {
    return absl::FailedPreconditionError("no trainer has any training seed (empty train split)");
  }
  std::vector<FetchJob> jobs;
  const int64_t num_batches = static_cast<int64_t>(plan.size());
  for (int64_t s = 0; num_batches > 0 && s < steps; ++s) {
    const PlannedBatch& b = plan[static_cast<size_t>(BatchForStep(s, num_batches))];
    jobs.push_back(
        {b.part, b.seeds, BatchSampleSeed(options.seed, epoch, comm.rank(), s, kTrainStream)});
  }
  Prefetcher prefetch(servers, std::move(jobs), options);
  const std::vector<torch::Tensor> params = model->parameters();
  model->train();
  double loss_sum = 0, correct = 0, seen = 0, fetch_wait_s = 0;
  for (int64_t s = 0; s < steps; ++s) {
    optimizer.zero_grad();
    if (num_batches > 0) {  // a rank without seeds still joins the all-reduce, with zeros
      const auto fetch_start = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(MinibatchData batch, prefetch.Next());
      fetch_wait_s += SecondsSince(fetch_start);
      ASSIGN_OR_RETURN(BatchTensors t, ToTensors(batch, servers.metadata.num_classes));
      torch::Tensor logits =
          model->forward(ModelInput(t, options), t.edge_src, t.edge_dst).slice(0, 0, t.batch_size);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, t.y);
      loss.backward();
      loss_sum += loss.item<double>() * static_cast<double>(t.batch_size);
      correct += logits.argmax(1).eq(t.y).sum().item<double>();
      seen += static_cast<double>(t.batch_size);
    }
    torch::Tensor grads = FlattenGradients(params);
    RETURN_IF_ERROR(
        comm.AllReduce(absl::MakeSpan(grads.data_ptr<float>(), static_cast<size_t>(grads.numel())),
                       ReduceOp::kSum));
    grads.div_(comm.world_size());
    UnflattenIntoGradients(grads, params);
    optimizer.step();
  }
  EpochStats stats;
  stats.local_seeds = seen;
  stats.local_time_s = SecondsSince(t0);
  stats.fetch_wait_s = fetch_wait_s;
  double sums[4] = {loss_sum, correct, seen, seen / std::max(stats.local_time_s, 1e-9)};
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(sums), ReduceOp::kSum));
  double time_s = stats.local_time_s;
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(&time_s, 1), ReduceOp::kMax));
  stats.loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  stats.train_acc = sums[2] > 0 ? sums[1] / sums[2] : 0;
  stats.seeds_per_s = sums[3];
  stats.time_s = time_s;
  return stats;
}

std::string Fingerprint(const std::vector<torch::Tensor>& params) {
  Fnv1a64 h;
  for (const torch::Tensor& p : params) {
    torch::Tensor c = p.detach().contiguous();
    h.Update(c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
  }
  return h.Hex();
}

absl::StatusOr<TrainSummary> RunTrainingImpl(const TrainerOptions& options, ServerSet& servers,
                                             Communicator& comm, std::ostream& out,
                                             std::ostream& log) {
  torch::set_num_threads(options.threads);
  const ServerMetadata& md = servers.metadata;
  const int rank = comm.rank();
  ASSIGN_OR_RETURN(Shards shards, LoadShards(servers, rank, comm.world_size()));
  log << absl::StrFormat(
      "rank %d: %d parts, feat_dim %d, %d classes; seeds train %d val %d test %d from "
      "parts",
      rank, md.num_parts, md.feat_dim, md.num_classes, TotalSeeds(shards.train),
      TotalSeeds(shards.val), TotalSeeds(shards.test));
  for (const ShardSeeds& s : shards.train) log << " " << s.part;
  log << "\n";
  if (shards.train.empty() || TotalSeeds(shards.train) == 0) {
    log << "rank " << rank << ": warning: no training seeds; contributing zero gradients\n";
  }

  torch::manual_seed(options.seed);
  GraphSage model(GraphSageOptions{.in_channels = md.feat_dim,
                                   .hidden_channels = options.hidden,
                                   .out_channels = md.num_classes,
                                   .num_layers = static_cast<int64_t>(options.fanouts.size()),
                                   .dropout = options.dropout});
  const std::vector<torch::Tensor> params = model->parameters();
  {  // Same seed everywhere already; the broadcast makes identical start weights a guarantee.
    torch::Tensor flat = FlattenParameters(params);
    RETURN_IF_ERROR(comm.Broadcast(
        absl::MakeSpan(flat.data_ptr<float>(), static_cast<size_t>(flat.numel())), 0));
    UnflattenIntoParameters(flat, params);
  }
  torch::optim::Adam optimizer(
      params, torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay));

  TrainSummary summary;
  double total_local_seeds = 0, total_local_time = 0;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    ASSIGN_OR_RETURN(EpochStats st,
                     TrainEpoch(model, optimizer, servers, shards.train, options, epoch, comm));
    total_local_seeds += st.local_seeds;
    total_local_time += st.local_time_s;
    summary.loss = st.loss;
    summary.train_acc = st.train_acc;
    summary.epochs = epoch;
    std::string line =
        absl::StrFormat("epoch %d loss %.4f train_acc %.4f", epoch, st.loss, st.train_acc);
    const auto eval_start = std::chrono::steady_clock::now();
    if (epoch % options.eval_every == 0 || epoch == options.epochs) {
      ASSIGN_OR_RETURN(EvalCounts val,
                       EvaluateSplit(model, servers, shards.val, options, epoch, rank, kValStream));
      ASSIGN_OR_RETURN(EvalCounts test, EvaluateSplit(model, servers, shards.test, options, epoch,
                                                      rank, kTestStream));
      double counts[4] = {val.correct, val.total, test.correct, test.total};
      RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(counts), ReduceOp::kSum));
      summary.val_acc = counts[1] > 0 ? counts[0] / counts[1] : 0;
      summary.test_acc = counts[3] > 0 ? counts[2] / counts[3] : 0;
      absl::StrAppendFormat(&line, " val_acc %.4f test_acc %.4f", summary.val_acc,
                            summary.test_acc);
    }
    absl::StrAppendFormat(&line, " seeds_per_s %.1f time_s %.2f", st.seeds_per_s, st.time_s);
    log << absl::StrFormat(
        "rank %d epoch %d: train %.3fs (waiting for batches %.3fs), eval %.3fs\n", rank, epoch,
        st.local_time_s, st.fetch_wait_s, SecondsSince(eval_start));
    if (rank == 0) out << line << std::endl;
  }
  double rate = total_local_seeds / std::max(total_local_time, 1e-9);
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(&rate, 1), ReduceOp::kSum));
  summary.seeds_per_s = rate;
  summary.weights_fingerprint = Fingerprint(params);
  log << "rank " << rank << " weights_fingerprint " << summary.weights_fingerprint << std::endl;
  if (rank == 0) {
    // Keys in the order of DESIGN.md's example (ordered_json keeps insertion order).
    nlohmann::ordered_json j = {
        {"test_acc", summary.test_acc},    {"val_acc", summary.val_acc},
        {"train_acc", summary.train_acc},  {"loss", summary.loss},
        {"epochs", summary.epochs},        {"seeds_per_s", summary.seeds_per_s},
        {"world_size", comm.world_size()}, {"weights_fingerprint", summary.weights_fingerprint}};
    out << j.dump() << std::endl;
  }
  return summary;
}

}  // namespace

absl::StatusOr<TrainSummary> RunTraining(const TrainerOptions& options, ServerSet& servers,
                                         Communicator& comm, std::ostream& out, std::ostream& log) {
  try {
    return RunTrainingImpl(options, servers, comm, out, log);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("torch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("training: ", e.what()));
  }
}

}  // namespace graphshard::trainer
