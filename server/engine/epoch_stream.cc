#include "server/engine/epoch_stream.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/batch_order.h"
#include "common/status_macros.h"
#include "server/engine/internal/build_minibatch.h"
#include "server/engine/internal/link_seeds.h"
#include "server/engine/minibatch_builder.h"
#include "server/engine/request_cost.h"

namespace graphshard::engine {
namespace {

// Everything a batch would check, once for the whole stream: every batch's seeds are a piece of
// this shard (at most batch_size of them, distinct), so BuildCheckedMinibatch skips the checks.
// Returns the number of hops.
absl::StatusOr<int> Validate(const LocalPart& local, const StreamRequest& r, int seed_type) {
  const Limits& lim = local.limits();
  if (r.batch_size < 1 || r.batch_size > lim.max_batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size ", r.batch_size, " is outside 1..",
                                                   lim.max_batch_size));
  }
  if (r.link.enabled()) {
    // A link batch seeds 2 * (1 + neg_ratio) endpoints per positive edge.
    const int64_t per_edge = 2 * (1 + static_cast<int64_t>(std::max(0, r.link.neg_ratio)));
    if (r.batch_size > lim.max_batch_size / per_edge) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch_size ", r.batch_size, " with neg_ratio ", r.link.neg_ratio, " seeds up to ",
          r.batch_size * per_edge, " nodes, above the limit ", lim.max_batch_size));
    }
  } else {
    if (r.seeds.empty()) return absl::InvalidArgumentError("empty seed shard");
    if (std::ssize(r.seeds) > lim.max_stream_seeds) {
      return absl::InvalidArgumentError(absl::StrCat(r.seeds.size(), " seeds exceed the limit ",
                                                     lim.max_stream_seeds));
    }
    RETURN_IF_ERROR(local.CheckOwned(seed_type, r.seeds, "seeds"));
    std::vector<int64_t> sorted = r.seeds;
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      return absl::InvalidArgumentError(absl::StrCat("seed ", *dup, " appears twice in the shard"));
    }
  }
  if (r.num_batches < 0) {
    return absl::InvalidArgumentError(absl::StrCat("num_batches ", r.num_batches, " is < 0"));
  }
  // Batch b's seeds start at b * batch_size of the (wrapped) order: that product must fit.
  if (r.num_batches > std::numeric_limits<int64_t>::max() / r.batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("num_batches ", r.num_batches, " x batch_size ",
                                                   r.batch_size, " overflows int64"));
  }
  if (r.num_epochs < 1 || r.num_epochs > lim.max_stream_epochs) {
    return absl::InvalidArgumentError(absl::StrCat("num_epochs ", r.num_epochs,
                                                   " is outside 1..", lim.max_stream_epochs));
  }
  // The stream's last epoch is epoch + num_epochs - 1: it must fit in an int64.
  if (r.epoch < 0 || r.epoch > std::numeric_limits<int64_t>::max() - r.num_epochs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "epoch ", r.epoch, " is outside 0..", std::numeric_limits<int64_t>::max() - r.num_epochs,
        " (epoch + num_epochs must fit in an int64)"));
  }
  ASSIGN_OR_RETURN(const int hops, ValidateSampling(local, r.sampling));
  // A link batch seeds up to 2 * (1 + neg_ratio) endpoints per positive edge (checked above).
  const int64_t batch =
      r.link.enabled()
          ? r.batch_size * 2 * (1 + static_cast<int64_t>(std::max(0, r.link.neg_ratio)))
          : std::min<int64_t>(r.batch_size, std::ssize(r.seeds));
  RETURN_IF_ERROR(CheckCost(MinibatchCost(local, seed_type, batch, r.sampling, hops), lim,
                            absl::StrCat("a batch of ", batch, " seeds")));
  // A link stream's seed times are its supervision edges' times (ValidateLink checks them).
  RETURN_IF_ERROR(ValidateTemporal(local, r.sampling, seed_type,
                                   /*seed_times_given=*/r.link.enabled()));
  return hops;
}

}  // namespace

std::vector<int64_t> ShuffledSeeds(const StreamRequest& request, int64_t epoch) {
  std::vector<int64_t> order = request.seeds;
  if (request.shuffle) common::ShuffleForEpoch(order, request.shuffle_seed, epoch);
  return order;
}

std::vector<int64_t> BatchSeeds(const std::vector<int64_t>& shuffled, int64_t batch_size,
                                int64_t b) {
  return common::BatchOfOrder(shuffled, batch_size, b);
}

uint64_t BatchSamplingSeed(const StreamRequest& request, int64_t epoch, int64_t b) {
  return common::BatchSamplingSeed(request.shuffle_seed, epoch, b);
}

// What the stream and its jobs share; jobs hold it by shared_ptr, so the stream can go away
// while a job still runs.
struct EpochStream::Shared {
  // A table stream's source, which `local` and `peers` belong to (null otherwise); first, so
  // that it goes last.
  std::shared_ptr<TableSource> table;
  const LocalPart* local = nullptr;
  Peers* peers = nullptr;
  common::Executor* executor = nullptr;
  StreamRequest request;
  int seed_type = 0;  // index of request.seed_type in local->node_types()
  int hops = 0;       // ValidateSampling(request.sampling)
  std::unique_ptr<const internal::LinkPlan> link;  // link streams only
  EpochStream::Hooks hooks;
  std::atomic<bool> cancelled{false};
};

struct EpochStream::Job {
  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  std::optional<absl::StatusOr<Minibatch>> result ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::unique_ptr<EpochStream>> EpochStream::Start(const LocalPart& local,
                                                               Peers& peers,
                                                               common::Executor& executor,
                                                               StreamRequest request,
                                                               int prefetch, Hooks hooks) {
  return Create(local, peers, nullptr, executor, std::move(request), prefetch, std::move(hooks));
}

absl::StatusOr<std::unique_ptr<EpochStream>> EpochStream::Start(std::shared_ptr<TableSource> table,
                                                               common::Executor& executor,
                                                               StreamRequest request,
                                                               int prefetch, Hooks hooks) {
  const LocalPart& local = *table->view;
  Peers& peers = table->peers;
  return Create(local, peers, std::move(table), executor, std::move(request), prefetch,
                std::move(hooks));
}

absl::StatusOr<std::unique_ptr<EpochStream>> EpochStream::Create(
    const LocalPart& local, Peers& peers, std::shared_ptr<TableSource> table,
    common::Executor& executor, StreamRequest request, int prefetch, Hooks hooks) {
  int seed_type = request.seed_type.empty() ? local.target_type()
                                            : local.NodeTypeIndex(request.seed_type);
  if (seed_type < 0) {
    return absl::InvalidArgumentError(absl::StrCat("unknown node type '", request.seed_type, "'"));
  }
  ASSIGN_OR_RETURN(const int hops, Validate(local, request, seed_type));
  std::unique_ptr<const internal::LinkPlan> link;
  if (request.link.enabled()) {
    ASSIGN_OR_RETURN(internal::LinkPlan plan, internal::ValidateLink(local, request.link,
                                                                   request.sampling,
                                                                   request.seeds));
    seed_type = plan.dst_type;
    link = std::make_unique<const internal::LinkPlan>(std::move(plan));
  }
  const int64_t n = std::ssize(request.seeds);
  const int64_t natural = (n + request.batch_size - 1) / request.batch_size;
  const int64_t total = request.num_batches > 0 ? request.num_batches : natural;
  if (request.first_batch < 0 || request.first_batch > total) {
    return absl::InvalidArgumentError(absl::StrCat("first_batch ", request.first_batch,
                                                   " is outside 0..", total));
  }
  if (total > std::numeric_limits<int64_t>::max() / request.num_epochs) {
    return absl::InvalidArgumentError(absl::StrCat("num_batches ", total, " x num_epochs ",
                                                   request.num_epochs, " is too many batches"));
  }
  auto stream = std::unique_ptr<EpochStream>(new EpochStream());
  stream->shared_ = std::make_shared<Shared>();
  Shared& s = *stream->shared_;
  s.table = std::move(table);
  s.local = &local;
  s.peers = &peers;
  s.executor = &executor;
  s.hooks = std::move(hooks);
  s.request = std::move(request);
  s.request.seed_type = local.node_types()[seed_type].name;
  s.seed_type = seed_type;
  s.hops = hops;
  s.link = std::move(link);
  stream->prefetch_ = std::max(1, prefetch);
  stream->per_epoch_ = std::max<int64_t>(1, total);
  stream->end_ = total * s.request.num_epochs;
  stream->next_ = s.request.first_batch;
  stream->posted_ = s.request.first_batch;
  stream->PostUpTo(std::min(stream->end_, stream->next_ + stream->prefetch_));
  return stream;
}

int64_t EpochStream::next_epoch() const { return shared_->request.epoch + next_ / per_epoch_; }

void EpochStream::PostUpTo(int64_t end) {
  for (; posted_ < end; ++posted_) {
    auto job = std::make_shared<Job>();
    window_.push_back(job);
    const int64_t epoch = shared_->request.epoch + posted_ / per_epoch_;
    const int64_t b = posted_ % per_epoch_;
    if (epoch != shuffled_epoch_) {
      shuffled_ = std::make_shared<const std::vector<int64_t>>(
          ShuffledSeeds(shared_->request, epoch));
      shuffled_epoch_ = epoch;
    }
    shared_->executor->Post([shared = shared_, shuffled = shuffled_, job, epoch, b] {
      absl::StatusOr<Minibatch> result = absl::CancelledError("stream cancelled");
      if (!shared->cancelled.load()) {
        MinibatchRequest r;
        r.seed_type = shared->request.seed_type;
        r.seeds = BatchSeeds(*shuffled, shared->request.batch_size, b);
        r.sampling = shared->request.sampling;
        r.seed = BatchSamplingSeed(shared->request, epoch, b);
        r.place_features = shared->hooks.place_features;
        r.cancelled = [&shared] { return shared->cancelled.load(); };
        // Allocation failure is the request's cost, not a crash: ResourceExhausted.
        try {
          if (shared->link != nullptr) {
            const internal::LinkSeeds link =
                internal::MakeLinkSeeds(*shared->local, *shared->link, r.seeds, r.seed);
            r.seeds.clear();
            result = internal::BuildCheckedMinibatch(*shared->local, *shared->peers, r,
                                                     shared->seed_type, shared->hops, &link);
          } else {
            result = internal::BuildCheckedMinibatch(*shared->local, *shared->peers, r,
                                                     shared->seed_type, shared->hops, nullptr);
          }
          if (result.ok()) {
            BuildProfile profile = result->profile;  // the finisher may replace the batch
            common::ThreadUsageClock clock;
            if (shared->hooks.finish && !shared->cancelled.load()) shared->hooks.finish(*result);
            clock.Lap(&profile.finish);
            result->profile = profile;
            if (shared->hooks.built) shared->hooks.built(profile);
          }
        } catch (const std::bad_alloc&) {
          result = absl::ResourceExhaustedError(absl::StrCat(
              "out of memory building batch ", b, " of epoch ", epoch, " (",
              r.seeds.size(), " seeds)"));
        }
      }
      absl::MutexLock lock(&job->mu);
      job->result = std::move(result);
      job->done = true;
    });
  }
}

absl::StatusOr<std::optional<Minibatch>> EpochStream::Next(const CancelFn& cancelled) {
  if (next_ >= end_ || window_.empty()) return std::optional<Minibatch>();
  std::shared_ptr<Job> job = window_.front();
  absl::StatusOr<Minibatch> result = absl::InternalError("unset");
  {
    absl::MutexLock lock(&job->mu);
    while (!job->mu.AwaitWithTimeout(absl::Condition(&job->done), kCancelPoll)) {
      if (cancelled && cancelled()) {
        shared_->cancelled = true;  // the builders stop at their next look
        return absl::CancelledError("the stream was cancelled");
      }
    }
    result = std::move(*job->result);
    job->result.reset();
  }
  window_.pop_front();
  ++next_;
  if (!result.ok()) {
    next_ = end_;  // the stream ends with the error
    shared_->cancelled = true;
    window_.clear();
    return result.status();
  }
  PostUpTo(std::min(end_, next_ + prefetch_));
  return std::optional<Minibatch>(*std::move(result));
}

EpochStream::~EpochStream() {
  if (shared_ != nullptr) shared_->cancelled = true;
  // window_ goes away now: finished batches are freed; running jobs free theirs on return.
}

}  // namespace graphshard::engine
