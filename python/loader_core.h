#ifndef GRAPHSHARD_PYTHON_LOADER_CORE_H_
#define GRAPHSHARD_PYTHON_LOADER_CORE_H_

// The Python loader's C++ side, without Python and without Torch: the trainer's Torch-free
// client layer (client/server_set.h, assignment.h, epoch_plan.h, batch_client.h) put together
// for one split, so that `graphshard.Loader` reads the same seeds, in the same steps, as
// graphshard-trainer would on the same rank: host-local assignment (AssignHostLocal over every
// rank's host id), the server's shuffle from (StreamShuffleSeed(seed, part), epoch), and, for
// training, every rank running the same number of steps (the caller hands in the all-ranks
// maximum). The module (python/module.cc) wraps it; the collectives (host ids, step counts) are
// the caller's, through torch.distributed.
// Not thread-safe: one thread drives it (the Python binding holds the GIL around every call
// but Next(), which a single iterator calls).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "client/assignment.h"
#include "client/batch_client.h"
#include "client/data_types.h"
#include "client/epoch_plan.h"
#include "client/server_set.h"
#include "shm/ring.h"

namespace graphshard::python {

struct LoaderOptions {
  std::string registry_dir;          // one of these two (client/server_set.h)
  std::vector<std::string> servers;  // index = part
  std::string split = "train";       // train, val or test
  std::vector<int32_t> fanouts = {10, 5};  // -1 = every neighbor
  int64_t batch_size = 256;
  bool shuffle = true;
  bool replace = false;
  uint64_t seed = 0;  // the trainer's --seed: shuffles are (StreamShuffleSeed(seed, part), epoch)
  client::FeatureDtype feature_dtype = client::FeatureDtype::kFloat32;
  int rank = 0;
  int world_size = 1;
  double server_wait_s = 60;
  double rpc_timeout_s = 60;
  // A stream waiting longer than this for its next batch is stalled (a hung server), and every
  // connection's keepalive pings notice a stopped server within it (client/batch_client.h).
  double stall_timeout_s = 30;
  int max_held_batches = 8;  // ring segments a stream may have alive in this process
  // Which of its host's parts this rank reads (client/assignment.h), as the trainer's
  // --assignment (default part).
  client::Assignment assignment = client::Assignment::kPart;
  // The job token's file (mode 0600); "" = $GRAPHSHARD_TOKEN, else no token (docs/SECURITY.md).
  std::string token_file;
  // Batches without feature rows (ids, edges, the seeds' labels): the caller holds the rows
  // (FeatureRows; the trainer's --feature-store device).
  bool without_features = false;
  // Set by SetInputNodes (node type, "" = the target type, and the ids) and SetLink.
  std::string seed_type;
  absl::optional<std::vector<int64_t>> input_nodes;
  client::StreamOptions::Link link;  // edge_type set: link prediction over `split`'s edges
};

// One step of an epoch.
struct LoaderStep {
  bool end = false;                             // past the epoch's last step
  absl::optional<client::MinibatchData> batch;  // none: a step without a batch
  int part = -1;                                // the server it came from
};

class LoaderCore {
 public:
  // Connects to every server (registry or list) within server_wait_s. InvalidArgument for bad
  // options (naming the option), and the errors of client::ConnectServers.
  static absl::StatusOr<std::unique_ptr<LoaderCore>> Connect(const LoaderOptions& options);

  const client::ServerMetadata& metadata() const { return servers_.metadata; }
  // Each part's server's host id (index = part), as Assign compares them with the ranks'.
  const std::vector<std::string>& server_hosts() const { return servers_.host_ids; }
  // Hooks for the ring segments every server's client maps (python/cuda_host.h); before the
  // first StartEpoch.
  void SetRingMapHooks(const shm::ShmRingReader::MapHooks& hooks);
  const LoaderOptions& options() const { return options_; }
  // Batches with or without feature rows (LoaderOptions::without_features), for a loader that
  // decides once it knows the metadata (feature_store="auto"); before the first StartEpoch.
  void SetWithoutFeatures(bool without) { options_.without_features = without; }

  // Seeds given by the caller (the Python loader's input_nodes) instead of the split's: `ids`
  // of node type `seed_type` ("" = the target type; any type may seed). Each part's server gets
  // the ones it owns (the type's part_offsets), in the order given, and a rank its share of
  // those (Assign). Before Assign. InvalidArgument naming input_nodes for an unknown type, no
  // ids, an id outside [0, num_nodes) or one given twice; FailedPrecondition when the servers
  // do not say which ids each part owns.
  absl::Status SetInputNodes(const std::string& seed_type, std::vector<int64_t> ids);
  // Link prediction (PyG's LinkNeighborLoader): the seeds are the positions of the options'
  // `split` edges of link.edge_type in each part's edge split; each batch holds batch_size of
  // them plus link.neg_ratio negatives per positive (data_types.h, LinkLabelData). Before
  // Assign. InvalidArgument naming the edge type when the graph lacks it or has no such edge
  // split (a partition made without --edge-split).
  absl::Status SetLink(const client::StreamOptions::Link& link);

  // This rank's seeds: its share of the split (or of input_nodes, or of the link split) on the
  // parts AssignHostLocal gives it, from `rank_hosts` (every rank's shm::HostId(), index =
  // rank). The errors of AssignHostLocal and GetSplit.
  absl::Status Assign(const std::vector<std::string>& rank_hosts);
  const std::vector<client::ServerShare>& shares() const { return shares_; }
  // After Assign: this rank's seeds on each part it reads (node ids, or link positions).
  const std::vector<client::ShardSeeds>& seeds() const { return shards_; }
  // After Assign: ceil(seeds / batch_size) summed over this rank's parts.
  int64_t natural_steps() const;
  int64_t num_seeds() const;

  // Opens epoch `epoch` with `steps` (>= natural_steps()) steps: the surplus steps go to the
  // first part with seeds (its server wraps around with full batches, as for the trainer).
  // The streams span many epochs (StreamOptions::num_epochs), so that the servers build the next
  // epoch's first batches while this one ends, as for the trainer: the epoch after one read to
  // its end, with the same steps, continues them; any other epoch (one left early, a step count
  // changed, set_epoch elsewhere, a stream that failed) closes them and opens new ones. Either
  // way the batches are those of a stream of that epoch alone. FailedPrecondition before
  // Assign; InvalidArgument for too few steps; the errors of StreamBatches.
  absl::Status StartEpoch(int64_t epoch, int64_t steps);

  // Every feature row of node type `type` (index into metadata().node_types), in the options'
  // feature dtype, row-major, written into `out` (num_nodes x feat_dim x dtype bytes): part p's
  // rows from its server, `rows_per_call` at a time. InvalidArgument for a wrong `out` size or
  // type; the servers' errors naming them; FailedPrecondition when they do not report which
  // ids each part owns.
  absl::Status FeatureRows(int type, absl::Span<char> out, int64_t rows_per_call = 1 << 16);

  // The next step of the epoch (blocks on the server). After the last one, `end`. The stream's
  // error naming the server; DataLoss for a stream that ends early or sends a batch of another
  // epoch.
  absl::StatusOr<LoaderStep> Next();

 private:
  LoaderCore(const LoaderOptions& options, client::ServerSet servers)
      : options_(options), servers_(std::move(servers)) {}
  // The seeds of `part` before the rank's share is cut: its split, its input_nodes or its link
  // split's positions.
  absl::StatusOr<std::vector<int64_t>> PartSeeds(int part);

  LoaderOptions options_;
  client::ServerSet servers_;
  std::string host_id_;
  std::vector<client::ServerShare> shares_;
  std::vector<client::ShardSeeds> shards_;
  bool assigned_ = false;
  // The open streams: at epoch `epoch_` (its steps read up to next_step_), opened for epochs up
  // to `last_epoch_` with `steps_` steps each; `broken_` once one of them failed.
  std::vector<std::unique_ptr<client::BatchStream>> streams_;
  std::vector<int> step_stream_;
  size_t next_step_ = 0;
  int64_t epoch_ = -1, last_epoch_ = -1, steps_ = -1;
  bool broken_ = false;
};

}  // namespace graphshard::python

#endif  // GRAPHSHARD_PYTHON_LOADER_CORE_H_
