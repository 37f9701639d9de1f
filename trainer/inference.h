#ifndef GRAPHSHARD_TRAINER_INFERENCE_H_
#define GRAPHSHARD_TRAINER_INFERENCE_H_

// Full-graph inference, layer by layer, as DistDGL does it (trainer/README.md, "Inference"):
// every node of every part gets the model's outputs computed over its whole in-neighbourhood,
// one layer (model pass, model.h) at a time. Each rank streams one-hop, fanout -1 blocks of the
// nodes of its shares' parts (assignment.h) from their servers, computes the pass for those
// nodes, and puts the rows back into the server that owns them (a layer table,
// server/engine/layer_tables.h); the next pass streams blocks over that table, remote rows
// coming from peer servers as features do. After the last pass each rank holds the logits (and
// the last hidden layer) of its nodes. No Torch in this header. Every rank calls these
// functions at the same point (collectives).

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/assignment.h"
#include "client/communicator.h"
#include "client/options.h"
#include "client/server_set.h"
#include "trainer/session.h"
#include "trainer/train.h"

namespace graphshard::trainer {

struct InferenceResult {
  int64_t nodes = 0;   // nodes inferred, over all ranks
  double seconds = 0;  // wall time of the passes (the slowest rank's end)
  // Over all ranks: predictions (argmax of the logits) equal to the label, on each split.
  double val_correct = 0, val_total = 0, test_correct = 0, test_total = 0;
};

// Runs the passes with `session`'s model (left in training mode afterwards) and, when
// `out_dir` is not empty, writes per share DIR/part_<p>/ (DIR/part_<p>/chunk_<c>/ when several
// ranks share part p): orig_id.npy (int64 [n], the input graph's ids), logits.npy (float32
// [n, classes]), predictions.npy (int64 [n]), embeddings.npy (float32 [n, hidden]: the last
// hidden layer, after its activation; not with one layer), rows in global id order. Errors: the
// servers' and the collectives'; Unimplemented naming the model when it has no layer-wise
// form (heterogeneous sage); InvalidArgument for a graph task.
absl::StatusOr<InferenceResult> InferFullGraph(const client::TrainerOptions& options,
                                               client::ServerSet& servers,
                                               client::Communicator& comm, Session& session,
                                               const std::vector<client::ServerShare>& shares,
                                               const std::string& out_dir, std::ostream& log);

// Unimplemented, naming the model, unless `session`'s model has a layer-wise form (--eval full
// checks it before training).
absl::Status CheckInferable(const client::TrainerOptions& options,
                            const client::ServerMetadata& metadata, Session& session);

// --infer: loads --checkpoint-dir's model (refusing one of another shape: NotFound without a
// checkpoint, FailedPrecondition naming the settings or parameter shapes that differ), checks
// that --out can be written (FailedPrecondition naming it), runs InferFullGraph into --out,
// and has rank 0 print one JSON line on `out`: {"inference_nodes", "nodes_per_s", "time_s",
// "val_acc", "test_acc", "world_size", "passes"}. Never throws.
absl::Status RunInference(const client::TrainerOptions& options, client::ServerSet& servers,
                          client::Communicator& comm, std::ostream& out, std::ostream& log,
                          const RunEnvironment& env = {});

}  // namespace graphshard::trainer

#endif  // GRAPHSHARD_TRAINER_INFERENCE_H_
