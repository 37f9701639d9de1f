#ifndef GRAPHSHARD_CLIENT_CONFIG_FINGERPRINT_H_
#define GRAPHSHARD_CLIENT_CONFIG_FINGERPRINT_H_

// The settings a checkpoint must share with the run that resumes it, as one string: every option
// that changes what the run computes (the model, its optimisation, the batches it sees), and the
// world size. A checkpoint stores it; --resume refuses a checkpoint whose fingerprint differs
// (checkpoint.h). This is the only place that lists them: an option added to TrainerOptions is
// classified here, in or out (tests/client/config_fingerprint_test.cc fails until it is).
//
// In: task, model, layers (graph task; node tasks have one layer per fanout), hidden, fanouts,
// batch_size, seed, lr, weight_decay, dropout, replace, temporal (mode, strategy), feature_dtype,
// normalize_features, precision (bf16 rounds every matmul input; tf32 on CUDA too; as resolved for
// the device, and written only when not fp32). Out, with the reason:
//  - infer, out_dir, eval: inference reads the model, it neither changes it nor draws
//    randomness (--infer compares the model's shape settings alone: CheckSameModel);
//  - epochs: a resume may extend a run (batch b of epoch e does not depend on the epoch count);
//  - eval_every: evaluation reads the model, it neither changes it nor draws randomness;
//  - device, backend, h2d, threads, prefetch, trim: where and how the same computation runs
//    (weights may differ in the last bits, as between machines; trimming skips rows whose
//    outputs no later layer reads);
//  - checkpoint_dir, checkpoint_every, resume, metrics_file, progress_every_s,
//    stop_after_steps, profile_dir, servers, registry_dir and the timeouts: bookkeeping and
//    plumbing.
// No Torch. Thread-safe (a pure function).

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "client/options.h"

namespace graphshard::client {

// "task=node layers=0 model=sage hidden=64 fanouts=10,5 batch=256 seed=0 world=1 lr=0.01 wd=0
// dropout=0.5 replace=0 dtype=float32 normalize=0". Numbers are exact (a value that six digits
// do not round-trip is written with as many as it needs).
std::string ConfigFingerprint(const TrainerOptions& options, int world_size);

// --infer: OK when a checkpoint whose fingerprint is `checkpoint_config` holds the model that
// `options` build (task, model, hidden, layers: the fanout count of a node task, normalize:
// the input it was trained on); else FailedPrecondition naming `checkpoint` and every setting
// that differs, with both values. The feature and class dims are the parameters' shapes
// (checkpoint.h, LoadCheckpointModel).
absl::Status CheckSameModel(absl::string_view checkpoint_config, const TrainerOptions& options,
                            absl::string_view checkpoint);

}  // namespace graphshard::client

#endif  // GRAPHSHARD_CLIENT_CONFIG_FINGERPRINT_H_
