// Full-graph inference, pass by pass (inference.h). Torch: the model's passes over each block.
#include "trainer/inference.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/assignment.h"
#include "client/config_fingerprint.h"
#include "client/task.h"
#include "common/npy.h"
#include "common/status_macros.h"
#include "shm/ring.h"
#include "trainer/checkpoint.h"
#include "trainer/host_register.h"
#include "trainer/internal/session_state.h"
#include "trainer/tensors.h"

namespace graphshard::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// What one share (part, chunk) of this rank produced.
struct ShareRows {
  client::ServerShare share;
  std::vector<int64_t> ids;  // global ids, ascending
  std::vector<float> logits, embeddings;
  int64_t classes = 0, hidden = 0;
  std::vector<int64_t> labels;
};

// The nodes of `share`: its chunk of the part's target-type id range.
std::vector<int64_t> ShareNodes(const client::ServerMetadata& md,
                                const client::ServerShare& share) {
  const auto p = static_cast<size_t>(share.part);
  std::vector<int64_t> all(static_cast<size_t>(md.part_offsets[p + 1] - md.part_offsets[p]));
  for (size_t i = 0; i < all.size(); ++i) all[i] = md.part_offsets[p] + static_cast<int64_t>(i);
  absl::Span<const int64_t> chunk = client::ChunkOf(all, share.chunk, share.num_chunks);
  return {chunk.begin(), chunk.end()};
}

void Append(std::vector<float>& out, const torch::Tensor& rows) {
  torch::Tensor c = rows.to(torch::kCPU).contiguous();
  const float* p = c.data_ptr<float>();
  out.insert(out.end(), p, p + c.numel());
}

// Every rank has finished the pass (its rows are in the servers) before any starts the next,
// and all stop together when one failed (the others then say so: their collectives must match).
absl::Status Barrier(client::Communicator& comm, const absl::Status& mine) {
  int64_t failed = mine.ok() ? 0 : 1;
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(&failed, 1), client::ReduceOp::kSum));
  RETURN_IF_ERROR(mine);
  if (failed > 0) {
    return absl::AbortedError(absl::StrCat("inference: ", failed, " other rank(s) failed"));
  }
  return absl::OkStatus();
}

// One pass over one share: streams its blocks from `in_table` and puts the rows into
// `out_table`, or (last pass) keeps them as logits.
absl::Status RunShare(const client::TrainerOptions& options, client::PartitionClient& client,
                      const client::ServerMetadata& md, GnnModelImpl& model, torch::Device device,
                      int64_t pass, int64_t passes, uint64_t in_table, uint64_t out_table,
                      ShareRows& rows, int64_t& batch_size) {
  client::StreamOptions so;
  so.seeds = rows.ids;
  so.batch_size = batch_size;
  so.shuffle = false;
  so.fanouts = {-1};
  so.feature_dtype = pass == 0 ? options.feature_dtype : client::FeatureDtype::kFloat32;
  so.client_host_id = shm::HostId();
  so.max_held_batches = client::ResolvePrefetch(options.prefetch, /*gpu_sampled=*/false) + 4;
  so.table = in_table;
  client::ServerMetadata table_md = md;  // a table's rows have the previous pass's width
  if (pass > 0) {
    const int64_t dim = model.InferenceDim(pass - 1);
    table_md.feat_dim = dim;
    table_md.node_types[static_cast<size_t>(md.target)].feat_dim = dim;
  }
  // A block's whole in-neighbourhood of a wide table can be above the server's budget per
  // request (--max-request-mib), refused before any work when the stream starts: halve the
  // block until it fits (the outputs are the same whatever the block size).
  std::unique_ptr<client::BatchStream> stream;
  absl::optional<client::MinibatchData> first;
  for (;;) {
    so.batch_size = batch_size;
    ASSIGN_OR_RETURN(stream, client.StreamBatches(so, table_md));
    absl::StatusOr<absl::optional<client::MinibatchData>> next = stream->Next();
    if (next.ok()) {
      first = *std::move(next);
      break;
    }
    if (!absl::IsResourceExhausted(next.status()) || batch_size == 1) return next.status();
    stream.reset();
    batch_size = (batch_size + 1) / 2;
  }
  const bool last = pass == passes - 1;
  for (bool have_first = true;; have_first = false) {
    absl::optional<client::MinibatchData> batch;
    if (have_first) {
      batch = std::move(first);
    } else {
      ASSIGN_OR_RETURN(batch, stream->Next());
    }
    if (!batch.has_value()) break;
    const client::NodeBlockData& seeds = batch->nodes[static_cast<size_t>(batch->seed_block)];
    std::vector<int64_t> ids(static_cast<size_t>(batch->batch_size));
    std::memcpy(ids.data(), seeds.ids.data, ids.size() * sizeof(int64_t));
    ASSIGN_OR_RETURN(BatchTensors t, ToTensors(*batch, /*num_classes=*/0));
    if (last) {
      const int64_t* y = reinterpret_cast<const int64_t*>(seeds.labels.data);
      rows.labels.insert(rows.labels.end(), y, y + batch->batch_size);
    }
    batch.reset();
    t.ForEachTensor([&](torch::Tensor& x) { x = x.to(device); });
    ToFloatFeatures(t);
    if (pass == 0 && options.normalize_features) {
      for (torch::Tensor& x : t.x) {
        if (x.size(1) > 0) x = x / x.sum(1, /*keepdim=*/true).clamp_min(1);
      }
    }
    InferenceRows r = model.InferPass(pass, t);
    if (r.embedding.defined()) {
      rows.hidden = r.embedding.size(1);
      Append(rows.embeddings, r.embedding);
    }
    if (last) {
      rows.classes = r.rows.size(1);
      Append(rows.logits, r.rows);
      continue;
    }
    std::vector<float> values;
    Append(values, r.rows);
    RETURN_IF_ERROR(client.PutRows(out_table, r.rows.size(1), ids, values).status());
  }
  return absl::OkStatus();
}

// DIR/part_<p>/ (or .../chunk_<c>/ when several ranks share the part): orig_id, logits,
// predictions, embeddings, each written whole (a temp file, then renamed).
absl::Status WriteShare(const std::string& out_dir, client::PartitionClient& client,
                        const client::ServerMetadata& md, const ShareRows& rows) {
  std::string dir = absl::StrCat(out_dir, "/part_", rows.share.part);
  if (rows.share.num_chunks > 1) absl::StrAppend(&dir, "/chunk_", rows.share.chunk);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("--out: ", dir, ": ", ec.message()));
  ASSIGN_OR_RETURN(const std::vector<int64_t> part_orig, client.GetOrigIds());
  const int64_t part_begin = md.part_offsets[static_cast<size_t>(rows.share.part)];
  const auto n = static_cast<int64_t>(rows.ids.size());
  std::vector<int64_t> orig(static_cast<size_t>(n)), predictions(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t local = rows.ids[static_cast<size_t>(i)] - part_begin;
    if (local < 0 || local >= std::ssize(part_orig)) {
      return absl::DataLossError(absl::StrCat(client.Label(), ": GetOrigIds gave ",
                                              part_orig.size(), " ids; node ",
                                              rows.ids[static_cast<size_t>(i)], " is not there"));
    }
    orig[static_cast<size_t>(i)] = part_orig[static_cast<size_t>(local)];
    const float* l = rows.logits.data() + i * rows.classes;
    predictions[static_cast<size_t>(i)] = std::max_element(l, l + rows.classes) - l;
  }
  auto write = [&](const std::string& name, auto shape, const auto& values) -> absl::Status {
    const std::string path = absl::StrCat(dir, "/", name);
    const std::string tmp = absl::StrCat(path, ".tmp");
    absl::StatusOr<uint32_t> crc = common::WriteNpy(tmp, shape, absl::MakeConstSpan(values));
    if (!crc.ok()) {
      std::filesystem::remove(tmp, ec);  // e.g. a full disk: no partial file left taking room
      return absl::FailedPreconditionError(absl::StrCat("--out: ", crc.status().message()));
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) return absl::FailedPreconditionError(absl::StrCat("--out: ", path, ": ", ec.message()));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(write("orig_id.npy", std::vector<int64_t>{n}, orig));
  RETURN_IF_ERROR(write("logits.npy", std::vector<int64_t>{n, rows.classes}, rows.logits));
  RETURN_IF_ERROR(write("predictions.npy", std::vector<int64_t>{n}, predictions));
  if (rows.hidden > 0) {
    RETURN_IF_ERROR(write("embeddings.npy", std::vector<int64_t>{n, rows.hidden}, rows.embeddings));
  }
  return absl::OkStatus();
}

// Correct predictions and nodes of `split` among the share's rows.
void CountSplit(client::PartitionClient& client, const ShareRows& rows, absl::string_view split,
                double& correct, double& total, absl::Status& status) {
  absl::StatusOr<std::vector<int64_t>> ids = client.GetSplit(split);
  if (absl::IsInvalidArgument(ids.status())) return;  // the graph has no such split
  if (!ids.ok()) {
    status.Update(ids.status());
    return;
  }
  absl::flat_hash_set<int64_t> in_split(ids->begin(), ids->end());
  for (size_t i = 0; i < rows.ids.size(); ++i) {
    if (!in_split.contains(rows.ids[i])) continue;
    const float* l = rows.logits.data() + static_cast<int64_t>(i) * rows.classes;
    total += 1;
    if (std::max_element(l, l + rows.classes) - l == rows.labels[i]) correct += 1;
  }
}

// A fresh table id base shared by every rank (rank 0's draw): tables base + 1, base + 2, ...
absl::StatusOr<uint64_t> TableBase(client::Communicator& comm) {
  std::random_device rd;
  const uint64_t mine = (static_cast<uint64_t>(rd()) << 32 | rd()) & ~uint64_t{0xffff};
  ASSIGN_OR_RETURN(std::vector<std::string> all,
                   client::AllGatherStrings(comm, absl::StrCat(mine)));
  uint64_t base = 0;
  if (all.empty() || !absl::SimpleAtoi(all[0], &base)) {
    return absl::InternalError("inference: no table id from rank 0");
  }
  return base == 0 ? uint64_t{1} << 16 : base;
}

absl::Status NoLayerWiseForm(const client::TrainerOptions& options,
                             const client::ServerMetadata& md) {
  return absl::UnimplementedError(absl::StrCat(
      "--model ", options.model, (md.heterogeneous() ? " on a heterogeneous graph" : ""),
      " has no layer-wise full-graph inference yet (--infer, --eval full; homogeneous sage and "
      "gcn have it)"));
}

absl::StatusOr<InferenceResult> InferImpl(const client::TrainerOptions& options,
                                          client::ServerSet& servers, client::Communicator& comm,
                                          Session& session,
                                          const std::vector<client::ServerShare>& shares,
                                          const std::string& out_dir, std::ostream& log) {
  const client::ServerMetadata& md = servers.metadata;
  GnnModelImpl& model = *session.state().model;
  const int64_t passes = model.InferencePasses();
  if (passes == 0) return NoLayerWiseForm(options, md);
  ASSIGN_OR_RETURN(const uint64_t base, TableBase(comm));
  std::vector<ShareRows> rows;
  for (const client::ServerShare& s : shares) {
    ShareRows r;
    r.share = s;
    r.ids = ShareNodes(md, s);
    rows.push_back(std::move(r));
  }
  torch::NoGradGuard no_grad;
  model.eval();
  const auto start = Clock::now();
  absl::Status status;
  int64_t block = options.batch_size;  // nodes per block; halved where the server's budget asks
  for (int64_t pass = 0; pass < passes && status.ok(); ++pass) {
    const uint64_t in_table = pass == 0 ? 0 : base + static_cast<uint64_t>(pass);
    const uint64_t out_table = base + static_cast<uint64_t>(pass) + 1;
    const auto pass_start = Clock::now();
    const int64_t block_before = block;
    for (ShareRows& r : rows) {
      if (r.ids.empty()) continue;
      client::PartitionClient& client = *servers.clients[static_cast<size_t>(r.share.part)];
      status = RunShare(options, client, md, model, session.state().device, pass, passes, in_table,
                        out_table, r, block);
      if (!status.ok()) break;
    }
    if (block != block_before) {
      log << absl::StrFormat(
          "rank %d: inference pass %d: blocks of %d nodes (not %d): the server's budget per "
          "request (--max-request-mib) does not hold %d nodes' whole in-neighbourhoods\n",
          comm.rank(), pass + 1, block, block_before, block_before);
    }
    status = Barrier(comm, status);
    if (pass > 0) {  // the input table is read by nobody any more
      for (const ShareRows& r : rows) {
        (void)servers.clients[static_cast<size_t>(r.share.part)]->DropTable(in_table);
      }
    }
    if (!status.ok()) break;
    log << absl::StrFormat("rank %d: inference pass %d of %d in %.3f s\n", comm.rank(), pass + 1,
                           passes,
                           std::chrono::duration<double>(Clock::now() - pass_start).count());
  }
  model.train();
  RETURN_IF_ERROR(status);
  InferenceResult result;
  std::vector<double> sums(5, 0.0);
  for (const ShareRows& r : rows) {
    client::PartitionClient& client = *servers.clients[static_cast<size_t>(r.share.part)];
    sums[0] += static_cast<double>(r.ids.size());
    CountSplit(client, r, "val", sums[1], sums[2], status);
    CountSplit(client, r, "test", sums[3], sums[4], status);
    if (status.ok() && !out_dir.empty()) status = WriteShare(out_dir, client, md, r);
    if (!status.ok()) break;
  }
  std::vector<double> seconds = {std::chrono::duration<double>(Clock::now() - start).count()};
  RETURN_IF_ERROR(Barrier(comm, status));
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(sums), client::ReduceOp::kSum));
  RETURN_IF_ERROR(comm.AllReduce(absl::MakeSpan(seconds), client::ReduceOp::kMax));
  result.nodes = static_cast<int64_t>(sums[0]);
  result.val_correct = sums[1];
  result.val_total = sums[2];
  result.test_correct = sums[3];
  result.test_total = sums[4];
  result.seconds = seconds[0];
  return result;
}

// --out must be a folder this rank can write into.
absl::Status CheckWritable(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("--out ", dir, ": ", ec.message()));
  const std::string probe = absl::StrCat(dir, "/.graphshard_write_test.", ::getpid());
  {
    std::ofstream f(probe);
    if (!f.good()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--out ", dir, ": cannot create files there (", std::strerror(errno), ")"));
    }
  }
  std::filesystem::remove(probe, ec);
  return absl::OkStatus();
}

double Fraction(double a, double b) { return b > 0 ? a / b : 0.0; }

// An accuracy for the JSON line: null when nothing was measured (no such nodes), as the
// training summary does.
std::string Accuracy(double correct, double total) {
  return total > 0 ? absl::StrFormat("%.6f", correct / total) : "null";
}

// DIR/model/<parameter name>.npy (float32), what the outputs were computed with, for users and
// for reference computations (tests/e2e/infer_reference.py).
absl::Status WriteWeights(const std::string& out_dir, GnnModelImpl& model) {
  const std::string dir = out_dir + "/model";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("--out: ", dir, ": ", ec.message()));
  for (const auto& named : model.named_parameters()) {
    torch::Tensor w = named.value().detach().to(torch::kCPU, torch::kFloat32).contiguous();
    std::vector<int64_t> shape(w.sizes().begin(), w.sizes().end());
    absl::StatusOr<uint32_t> crc =
        common::WriteNpy(absl::StrCat(dir, "/", named.key(), ".npy"), shape,
                         absl::MakeConstSpan(w.data_ptr<float>(), static_cast<size_t>(w.numel())));
    if (!crc.ok())
      return absl::FailedPreconditionError(absl::StrCat("--out: ", crc.status().message()));
  }
  return absl::OkStatus();
}

absl::Status RunInferenceImpl(const client::TrainerOptions& options, client::ServerSet& servers,
                              client::Communicator& comm, std::ostream& out, std::ostream& log,
                              const RunEnvironment& env) {
  const client::ServerMetadata& md = servers.metadata;
  const int rank = comm.rank();
  // Refusals first, before anything heavy: the checkpoint's presence, --out.
  const std::string checkpoint = CheckpointPath(options.checkpoint_dir);
  if (!std::filesystem::exists(checkpoint)) {
    return absl::NotFoundError(absl::StrCat("--infer: no checkpoint at ", checkpoint,
                                            " (train with --checkpoint-dir ",
                                            options.checkpoint_dir, " first)"));
  }
  RETURN_IF_ERROR(CheckWritable(options.out_dir));
  ASSIGN_OR_RETURN(const DeviceChoice device, PickDevice(options, env.local_rank));
  if (device.cuda && options.h2d == client::H2dMode::kRegistered) {
    servers.directory->SetRingMapHooks(CudaHostRegisterHooks());
  }
  RETURN_IF_ERROR(client::CheckTaskData(options, md));
  ASSIGN_OR_RETURN(const std::vector<std::string> rank_hosts,
                   client::AllGatherStrings(comm, shm::HostId()));
  ASSIGN_OR_RETURN(const std::vector<client::ServerShare> shares,
                   client::AssignHostLocal(rank, rank_hosts, servers.host_ids, options.assignment));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   Session::Create(options, device, md, std::ssize(options.fanouts), comm,
                                   client::ConfigFingerprint(options, comm.world_size())));
  std::string config;
  RETURN_IF_ERROR(
      LoadCheckpointModel(options.checkpoint_dir, session->state(), [&](const std::string& c) {
        config = c;
        return client::CheckSameModel(c, options, checkpoint);
      }));
  log << "rank " << rank << ": inference with " << checkpoint << " (" << config << "), weights "
      << session->WeightsFingerprint() << "\n";
  ASSIGN_OR_RETURN(const InferenceResult r,
                   InferImpl(options, servers, comm, *session, shares, options.out_dir, log));
  if (rank == 0) {
    RETURN_IF_ERROR(WriteWeights(options.out_dir, *session->state().model));
    out << absl::StrFormat(
               "{\"inference_nodes\": %d, \"nodes_per_s\": %.1f, \"time_s\": %.3f, "
               "\"val_acc\": %s, \"test_acc\": %s, \"passes\": %d, \"world_size\": %d, "
               "\"out\": \"%s\"}",
               r.nodes, Fraction(static_cast<double>(r.nodes), r.seconds), r.seconds,
               Accuracy(r.val_correct, r.val_total), Accuracy(r.test_correct, r.test_total),
               session->state().model->InferencePasses(), comm.world_size(), options.out_dir)
        << std::endl;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<InferenceResult> InferFullGraph(const client::TrainerOptions& options,
                                               client::ServerSet& servers,
                                               client::Communicator& comm, Session& session,
                                               const std::vector<client::ServerShare>& shares,
                                               const std::string& out_dir, std::ostream& log) {
  try {
    return InferImpl(options, servers, comm, session, shares, out_dir, log);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("inference: torch: ", e.what_without_backtrace()));
  }
}

absl::Status CheckInferable(const client::TrainerOptions& options,
                            const client::ServerMetadata& metadata, Session& session) {
  if (session.state().model->InferencePasses() > 0) return absl::OkStatus();
  return NoLayerWiseForm(options, metadata);
}

absl::Status RunInference(const client::TrainerOptions& options, client::ServerSet& servers,
                          client::Communicator& comm, std::ostream& out, std::ostream& log,
                          const RunEnvironment& env) {
  try {
    return RunInferenceImpl(options, servers, comm, out, log, env);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("inference: torch: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("inference: ", e.what()));
  }
}

}  // namespace graphshard::trainer
