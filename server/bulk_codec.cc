#include "server/bulk_codec.h"

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/bytes.h"
#include "common/status_macros.h"

namespace graphshard::server {
namespace {

using transport::Body;
using transport::Received;

// Little-endian scalars and names into one meta array.
class MetaWriter {
 public:
  template <typename T>
  void Put(T value) {
    const char* p = reinterpret_cast<const char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void PutName(const std::string& name) {
    Put<uint32_t>(static_cast<uint32_t>(name.size()));
    bytes_.insert(bytes_.end(), name.begin(), name.end());
  }
  std::vector<char> Take() { return std::move(bytes_); }

 private:
  std::vector<char> bytes_;
};

// Reads what MetaWriter wrote; every read is bounds-checked, errors have `code`.
class MetaReader {
 public:
  MetaReader(const std::vector<char>& bytes, absl::StatusCode code)
      : bytes_(bytes), code_(code) {}
  template <typename T>
  absl::StatusOr<T> Get(const char* what) {
    if (!common::RangeFits(at_, sizeof(T), bytes_.size())) return Short(what);
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  absl::StatusOr<std::string> GetName(const char* what) {
    ASSIGN_OR_RETURN(uint32_t n, Get<uint32_t>(what));
    if (!common::RangeFits(at_, n, bytes_.size())) return Short(what);
    std::string name(bytes_.data() + at_, n);
    at_ += n;
    return name;
  }
  absl::Status Done() const {
    if (at_ == bytes_.size()) return absl::OkStatus();
    return absl::Status(code_, absl::StrCat("bulk meta array: ", bytes_.size() - at_,
                                            " bytes left over"));
  }

 private:
  absl::Status Short(const char* what) const {
    return absl::Status(code_, absl::StrCat("bulk meta array too short for ", what, " (",
                                            bytes_.size(), " bytes)"));
  }
  const std::vector<char>& bytes_;
  absl::StatusCode code_;
  size_t at_ = 0;
};

template <typename T>
absl::Span<const char> AsBytes(const std::vector<T>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

// The int64 values of `bytes`; a length that is not a multiple of 8 is an error with `code`.
absl::StatusOr<std::vector<int64_t>> Int64s(const std::vector<char>& bytes, absl::StatusCode code,
                                            const std::string& what) {
  return common::FromBytes<int64_t>(absl::string_view(bytes.data(), bytes.size()), what, code);
}

absl::Status CountIs(const Received& r, size_t want, absl::StatusCode code, const char* what) {
  if (r.arrays.size() == want) return absl::OkStatus();
  return absl::Status(code, absl::StrCat("bulk ", what, " has ", r.arrays.size(),
                                         " arrays, expected ", want));
}

// A body made of a meta array plus spans into a value it keeps (the engine's own vectors).
template <typename T>
class HeldBody final : public Body {
 public:
  HeldBody(T held, std::vector<char> meta, std::vector<absl::Span<const char>> (*spans)(const T&))
      : held_(std::move(held)), meta_(std::move(meta)), spans_(spans) {}
  std::vector<absl::Span<const char>> Arrays() const override {
    std::vector<absl::Span<const char>> out;
    if (!meta_.empty()) out.emplace_back(meta_.data(), meta_.size());
    for (absl::Span<const char> s : spans_(held_)) out.push_back(s);
    return out;
  }

 private:
  T held_;
  std::vector<char> meta_;
  std::vector<absl::Span<const char>> (*spans_)(const T&);
};

}  // namespace

std::unique_ptr<Body> EncodeOneHopRequest(engine::OneHopRequest request) {
  MetaWriter meta;
  meta.Put<uint8_t>(request.replace ? 1 : 0);
  meta.Put<uint8_t>(static_cast<uint8_t>(request.temporal));
  meta.Put<uint8_t>(static_cast<uint8_t>(request.temporal_strategy));
  meta.Put<uint32_t>(static_cast<uint32_t>(request.items.size()));
  for (const engine::HopItem& item : request.items) {
    meta.Put<int32_t>(item.fanout);
    meta.Put<uint64_t>(item.seed);
    meta.PutName(item.edge_type);
  }
  return std::make_unique<HeldBody<engine::OneHopRequest>>(
      std::move(request), meta.Take(), [](const engine::OneHopRequest& r) {
        std::vector<absl::Span<const char>> out;
        // Temporal: each item's seeds, then its times.
        for (const engine::HopItem& item : r.items) {
          out.push_back(AsBytes(item.seeds));
          if (r.temporal != engine::TemporalMode::kOff) out.push_back(AsBytes(item.times));
        }
        return out;
      });
}

absl::StatusOr<engine::OneHopRequest> DecodeOneHopRequest(Received request) {
  constexpr auto kCode = absl::StatusCode::kInvalidArgument;
  if (request.arrays.empty()) return absl::InvalidArgumentError("bulk SampleOneHop: no meta array");
  MetaReader meta(request.arrays[0], kCode);
  engine::OneHopRequest r;
  ASSIGN_OR_RETURN(uint8_t replace, meta.Get<uint8_t>("replace"));
  r.replace = replace != 0;
  ASSIGN_OR_RETURN(uint8_t temporal, meta.Get<uint8_t>("temporal mode"));
  ASSIGN_OR_RETURN(uint8_t strategy, meta.Get<uint8_t>("temporal strategy"));
  if (temporal > static_cast<uint8_t>(engine::TemporalMode::kBefore) ||
      strategy > static_cast<uint8_t>(engine::TemporalStrategy::kLast)) {
    return absl::InvalidArgumentError(absl::StrCat("bulk SampleOneHop: temporal mode ",
                                                   temporal, " / strategy ", strategy));
  }
  r.temporal = static_cast<engine::TemporalMode>(temporal);
  r.temporal_strategy = static_cast<engine::TemporalStrategy>(strategy);
  const uint64_t per_item = r.temporal == engine::TemporalMode::kOff ? 1 : 2;
  ASSIGN_OR_RETURN(uint32_t items, meta.Get<uint32_t>("item count"));
  RETURN_IF_ERROR(CountIs(request, 1 + per_item * items, kCode, "SampleOneHop request"));
  r.items.resize(items);
  for (uint32_t i = 0; i < items; ++i) {
    engine::HopItem& item = r.items[i];
    ASSIGN_OR_RETURN(item.fanout, meta.Get<int32_t>("fanout"));
    ASSIGN_OR_RETURN(item.seed, meta.Get<uint64_t>("seed"));
    ASSIGN_OR_RETURN(item.edge_type, meta.GetName("edge type"));
    ASSIGN_OR_RETURN(item.seeds, Int64s(request.arrays[1 + per_item * i], kCode, "seeds"));
    if (per_item == 2) {
      ASSIGN_OR_RETURN(item.times, Int64s(request.arrays[2 + per_item * i], kCode, "times"));
    }
  }
  RETURN_IF_ERROR(meta.Done());
  return r;
}

std::unique_ptr<Body> EncodeHopResults(std::vector<engine::HopResult> results) {
  return std::make_unique<HeldBody<std::vector<engine::HopResult>>>(
      std::move(results), std::vector<char>(), [](const std::vector<engine::HopResult>& rs) {
        std::vector<absl::Span<const char>> out;
        for (const engine::HopResult& r : rs) {
          out.push_back(AsBytes(r.counts));
          out.push_back(AsBytes(r.neighbors));
        }
        return out;
      });
}

absl::StatusOr<std::vector<engine::HopResult>> DecodeHopResults(Received answer, size_t items) {
  constexpr auto kCode = absl::StatusCode::kDataLoss;
  RETURN_IF_ERROR(CountIs(answer, 2 * items, kCode, "SampleOneHop answer"));
  std::vector<engine::HopResult> out(items);
  for (size_t i = 0; i < items; ++i) {
    ASSIGN_OR_RETURN(out[i].counts, Int64s(answer.arrays[2 * i], kCode, "counts"));
    ASSIGN_OR_RETURN(out[i].neighbors, Int64s(answer.arrays[2 * i + 1], kCode, "neighbors"));
    uint64_t total = 0;
    for (int64_t c : out[i].counts) {
      if (c < 0) return absl::DataLossError(absl::StrCat("bulk SampleOneHop answer: count ", c));
      total += static_cast<uint64_t>(c);
    }
    if (total != out[i].neighbors.size()) {
      return absl::DataLossError(absl::StrCat("bulk SampleOneHop answer, item ", i, ": counts add up to ",
                                              total, ", ", out[i].neighbors.size(), " neighbors"));
    }
  }
  return out;
}

std::unique_ptr<Body> EncodeGatherRequest(std::vector<engine::TypedIds> items,
                                          engine::FeatureDtype dtype) {
  MetaWriter meta;
  meta.Put<uint32_t>(static_cast<uint32_t>(dtype));
  meta.Put<uint32_t>(static_cast<uint32_t>(items.size()));
  for (const engine::TypedIds& t : items) meta.PutName(t.node_type);
  return std::make_unique<HeldBody<std::vector<engine::TypedIds>>>(
      std::move(items), meta.Take(), [](const std::vector<engine::TypedIds>& ts) {
        std::vector<absl::Span<const char>> out;
        for (const engine::TypedIds& t : ts) out.push_back(AsBytes(t.ids));
        return out;
      });
}

absl::StatusOr<GatherRequest> DecodeGatherRequest(Received request) {
  constexpr auto kCode = absl::StatusCode::kInvalidArgument;
  if (request.arrays.empty()) {
    return absl::InvalidArgumentError("bulk GatherFeatures: no meta array");
  }
  MetaReader meta(request.arrays[0], kCode);
  GatherRequest r;
  ASSIGN_OR_RETURN(uint32_t dtype, meta.Get<uint32_t>("dtype"));
  if (dtype > static_cast<uint32_t>(engine::FeatureDtype::kBFloat16)) {
    return absl::InvalidArgumentError(absl::StrCat("bulk GatherFeatures: unknown dtype ", dtype));
  }
  r.dtype = static_cast<engine::FeatureDtype>(dtype);
  ASSIGN_OR_RETURN(uint32_t items, meta.Get<uint32_t>("item count"));
  RETURN_IF_ERROR(CountIs(request, 1 + uint64_t{items}, kCode, "GatherFeatures request"));
  r.items.resize(items);
  for (uint32_t i = 0; i < items; ++i) {
    ASSIGN_OR_RETURN(r.items[i].node_type, meta.GetName("node type"));
    ASSIGN_OR_RETURN(r.items[i].ids, Int64s(request.arrays[1 + i], kCode, "ids"));
  }
  RETURN_IF_ERROR(meta.Done());
  return r;
}

std::unique_ptr<Body> EncodeFeatureBlocks(std::vector<engine::FeatureBlock> blocks) {
  MetaWriter meta;
  for (const engine::FeatureBlock& b : blocks) meta.Put<int64_t>(b.feat_dim);
  std::vector<char> dims = meta.Take();
  if (dims.empty()) dims.push_back(0);  // the meta array is always there: one byte, no items
  return std::make_unique<HeldBody<std::vector<engine::FeatureBlock>>>(
      std::move(blocks), std::move(dims), [](const std::vector<engine::FeatureBlock>& bs) {
        std::vector<absl::Span<const char>> out;
        for (const engine::FeatureBlock& b : bs) {
          out.push_back(AsBytes(b.features));
          out.push_back(AsBytes(b.labels));
        }
        return out;
      });
}

absl::StatusOr<std::vector<engine::FeatureBlock>> DecodeFeatureBlocks(
    Received answer, const std::vector<size_t>& ids_per_item, engine::FeatureDtype dtype) {
  constexpr auto kCode = absl::StatusCode::kDataLoss;
  const size_t items = ids_per_item.size();
  RETURN_IF_ERROR(CountIs(answer, 1 + 2 * items, kCode, "GatherFeatures answer"));
  const std::vector<char>& dims = answer.arrays[0];
  if (dims.size() != (items == 0 ? 1 : 8 * items)) {
    return absl::DataLossError(absl::StrCat("bulk GatherFeatures answer: ", dims.size(),
                                            " bytes of feature widths for ", items, " items"));
  }
  std::vector<engine::FeatureBlock> out(items);
  for (size_t i = 0; i < items; ++i) {
    engine::FeatureBlock& b = out[i];
    std::memcpy(&b.feat_dim, dims.data() + 8 * i, 8);
    const uint64_t n = ids_per_item[i];
    const uint64_t size = answer.arrays[1 + 2 * i].size();
    // feat_dim bounded first, so that the row size cannot overflow.
    const bool width_ok = b.feat_dim >= 0 && b.feat_dim <= (int64_t{1} << 32);
    const uint64_t row = width_ok ? static_cast<uint64_t>(b.feat_dim) *
                                        static_cast<uint64_t>(common::FeatureBytes(dtype))
                                  : 0;
    if (!width_ok || (n == 0 ? size != 0 : (size % n != 0 || size / n != row))) {
      return absl::DataLossError(absl::StrCat(
          "bulk GatherFeatures answer, item ", i, ": ", answer.arrays[1 + 2 * i].size(),
          " bytes of rows for ", n, " ids of width ", b.feat_dim));
    }
    b.features = std::move(answer.arrays[1 + 2 * i]);  // the rows as received: no copy
    ASSIGN_OR_RETURN(b.labels, Int64s(answer.arrays[2 + 2 * i], kCode, "labels"));
    if (b.labels.size() != n) {
      return absl::DataLossError(absl::StrCat("bulk GatherFeatures answer, item ", i, ": ",
                                              b.labels.size(), " labels for ", n, " ids"));
    }
  }
  return out;
}

}  // namespace graphshard::server
