#include "trainer/config_fingerprint.h"

#include <charconv>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphshard::trainer {
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
      " normalize=", o.normalize_features,
      o.task == Task::kLink ? LinkFingerprint(o.link) : "",
      // Written only when on, so that earlier checkpoints keep their spelling.
      o.temporal || o.temporal_strict
          ? absl::StrCat(" temporal=", o.temporal_strict ? "before" : "at_or_before", "/",
                         o.temporal_strategy)
          : "",
      // Written only where it is not fp32, the precision of every earlier checkpoint, so that
      // those keep their spelling and still resume.
      precision == Precision::kFp32 ? "" : absl::StrCat(" precision=", NameOf(precision)));
}

}  // namespace graphshard::trainer
