#include "client/config_fingerprint.h"

#include <charconv>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace graphshard::client {
namespace {

// As absl::StrCat writes it (six significant digits: the spelling of earlier checkpoints) where
// that reads back as `v`, else the shortest exact spelling: 0.0100001 and 0.01 must differ.
std::string Exact(double v) {
  std::string s = absl::StrCat(v);
  double back = 0;
  if (absl::SimpleAtod(s, &back) && back == v) return s;
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string ConfigFingerprint(const TrainerOptions& o, int world_size) {
  const bool graph = o.task == Task::kGraph;
  const Precision precision = ResolvePrecision(o.precision, o.device);
  return absl::StrCat(
      "task=", NameOf(o.task), " layers=", graph ? o.layers : 0, " model=", o.model,
      " hidden=", o.hidden, " fanouts=", absl::StrJoin(o.fanouts, ","), " batch=", o.batch_size,
      " seed=", o.seed, " world=", world_size, " lr=", Exact(o.lr), " wd=", Exact(o.weight_decay),
      " dropout=", Exact(o.dropout), " replace=", o.replace, " dtype=", NameOf(o.feature_dtype),
      " normalize=", o.normalize_features, o.task == Task::kLink ? LinkFingerprint(o.link) : "",
      // Written only when on, so that earlier checkpoints keep their spelling.
      o.temporal || o.temporal_strict
          ? absl::StrCat(" temporal=", o.temporal_strict ? "before" : "at_or_before", "/",
                         o.temporal_strategy)
          : "",
      // Written only where it is not fp32, the precision of every earlier checkpoint, so that
      // those keep their spelling and still resume.
      precision == Precision::kFp32 ? "" : absl::StrCat(" precision=", NameOf(precision)),
      // Which seeds each rank's steps take; written only where not the default (part).
      o.assignment == Assignment::kPart ? "" : absl::StrCat(" assignment=", NameOf(o.assignment)));
}

absl::Status CheckSameModel(absl::string_view checkpoint_config, const TrainerOptions& options,
                            absl::string_view checkpoint) {
  std::map<std::string, std::string> theirs;
  for (absl::string_view kv : absl::StrSplit(checkpoint_config, ' ', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    if (eq != absl::string_view::npos) {
      theirs[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
  }
  // Layers of a node task: one per fanout (the fanout values themselves do not shape the model).
  if (auto it = theirs.find("fanouts"); it != theirs.end() && theirs["task"] == "node") {
    theirs["layers"] =
        absl::StrCat(std::vector<std::string>(absl::StrSplit(it->second, ',')).size());
  }
  const bool graph = options.task == Task::kGraph;
  const std::pair<const char*, std::string> ours[] = {
      {"task", std::string(NameOf(options.task))},
      {"model", options.model},
      {"hidden", absl::StrCat(options.hidden)},
      {"layers", absl::StrCat(graph ? options.layers : static_cast<int>(options.fanouts.size()))},
      {"normalize", absl::StrCat(options.normalize_features)},
  };
  std::vector<std::string> differ;
  for (const auto& [key, value] : ours) {
    auto it = theirs.find(key);
    const std::string there = it == theirs.end() ? "(missing)" : it->second;
    if (there != value) differ.push_back(absl::StrCat(key, " ", there, " there, ", value, " here"));
  }
  if (differ.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("checkpoint ", checkpoint, " holds another model: ", absl::StrJoin(differ, "; "),
                   " (pass the training run's --model, --hidden, --fanouts count, "
                   "--normalize-features)"));
}

}  // namespace graphshard::client
