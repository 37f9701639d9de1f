#include "tests/testing/partition_fixture.h"

#include <stdlib.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "partitioner/partition.h"

namespace graphshard::testing {

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/graphshard_XXXXXX");
  if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

partitioner::Graph TinyGraph() {
  using partitioner::Array;
  std::vector<int64_t> src, dst, labels;
  std::vector<float> features;
  for (int64_t v = 0; v < 10; ++v) {
    features.insert(features.end(),
                    {static_cast<float>(v), static_cast<float>(v) + 0.5f, -static_cast<float>(v)});
    labels.push_back(v == 9 ? -1 : v % 3);
    src.push_back(v);
    dst.push_back((v + 1) % 10);
  }
  src.insert(src.end(), {0, 3});
  dst.insert(dst.end(), {5, 7});
  partitioner::Graph g = partitioner::HomogeneousGraph(10, std::move(src), std::move(dst));
  partitioner::NodeTypeData& t = g.node_types[0];
  t.feat_dim = 3;
  t.num_classes = 3;
  t.features = Array<float>::Owned(std::move(features));
  t.labels = Array<int64_t>::Owned(std::move(labels));
  t.splits["train"] = Array<int64_t>::Owned({0, 1, 2, 3, 4, 5});
  t.splits["val"] = Array<int64_t>::Owned({6, 7});
  t.splits["test"] = Array<int64_t>::Owned({8, 9});
  return g;
}

absl::StatusOr<common::Manifest> WriteTinyPartition(const std::string& out, int parts) {
  partitioner::PartitionOptions options;
  options.num_parts = parts;
  options.seed = 1;
  return partitioner::PartitionGraph(TinyGraph(), options, out);
}

absl::StatusOr<std::string> ReadGz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  if (n < 0) return absl::DataLossError(absl::StrCat(path, ": corrupt"));
  return out;
}

absl::Status WriteGz(const std::string& path, const std::string& contents) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) return absl::InternalError(absl::StrCat(path, ": cannot create"));
  int n = contents.empty() ? 0
                           : gzwrite(f, contents.data(), static_cast<unsigned>(contents.size()));
  bool ok = gzclose(f) == Z_OK && n == static_cast<int>(contents.size());
  return ok ? absl::OkStatus() : absl::InternalError(absl::StrCat(path, ": write failed"));
}

absl::Status CopyTree(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive, ec);
  if (ec) return absl::InternalError(absl::StrCat("copy ", from, " -> ", to, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace graphshard::testing
