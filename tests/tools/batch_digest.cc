// batch_digest: streams minibatches from running partition servers over plain gRPC (bytes inline,
// no shared memory) and prints one FNV-1a 64 digest per server over every batch's deterministic
// serialization, then one over all of them. A behaviour lock for refactors: the same partition,
// servers and flags must give the same digests before and after (tests/e2e/batch_digest_test.sh).
// It uses only the generated protocol code, so that it does not move when the server's or the
// trainer's code does.
//   batch_digest --servers host:port,... [--epochs E] [--batch-size B] [--fanouts 10,5]
//                [--dtype float32|float16|bfloat16] [--disjoint] [--timeout-s S]
//                [--first-epoch E0] [--shuffle-seeds S0,S1,...] [--dump DIR]
// --shuffle-seeds: server k's stream shuffle seed (default 7 + k); --dump DIR also writes every
// batch's arrays as raw bytes, DIR/s<k>_e<epoch>_b<batch>_<array> (n<i>_ids, n<i>_features,
// n<i>_labels, n<i>_num_sampled, e<j>_src, e<j>_dst, e<j>_num_sampled), for comparing another
// client's batches with these (tests/python/loader_batches_test.py).
// Exit 0 with "server K digest HEX batches N" lines and a last "all HEX" line; 1 on any RPC
// failure (named with the server); 2 on usage errors.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <grpcpp/grpcpp.h>

#include "proto/graphshard.grpc.pb.h"

namespace {

struct Flags {
  std::vector<std::string> servers;
  int64_t epochs = 2;
  int64_t batch_size = 64;
  std::vector<int32_t> fanouts = {10, 5};
  graphshard::v1::FeatureDtype dtype = graphshard::v1::FLOAT32;
  bool disjoint = false;
  int timeout_s = 60;
  int64_t first_epoch = 1;
  std::vector<uint64_t> shuffle_seeds;
  std::string dump_dir;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool ParseFlags(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "batch_digest: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (a == "--servers") {
        f.servers = Split(value());
      } else if (a == "--epochs") {
        f.epochs = std::stoll(value());
      } else if (a == "--batch-size") {
        f.batch_size = std::stoll(value());
      } else if (a == "--fanouts") {
        f.fanouts.clear();
        for (const std::string& x : Split(value())) f.fanouts.push_back(std::stoi(x));
      } else if (a == "--dtype") {
        std::string d = value();
        if (d == "float32") f.dtype = graphshard::v1::FLOAT32;
        else if (d == "float16") f.dtype = graphshard::v1::FLOAT16;
        else if (d == "bfloat16") f.dtype = graphshard::v1::BFLOAT16;
        else return false;
      } else if (a == "--disjoint") {
        f.disjoint = true;
      } else if (a == "--first-epoch") {
        f.first_epoch = std::stoll(value());
      } else if (a == "--shuffle-seeds") {
        for (const std::string& x : Split(value())) f.shuffle_seeds.push_back(std::stoull(x));
      } else if (a == "--dump") {
        f.dump_dir = value();
      } else if (a == "--timeout-s") {
        f.timeout_s = std::stoi(value());
      } else {
        std::fprintf(stderr, "batch_digest: unknown flag %s\n", argv[i]);
        return false;
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "batch_digest: bad value for %s\n", argv[i - 1]);
      return false;
    }
  }
  return !f.servers.empty() && f.epochs > 0 && f.batch_size > 0 &&
         (f.shuffle_seeds.empty() || f.shuffle_seeds.size() == f.servers.size());
}

void Fnv(uint64_t& h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
}

std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

bool WriteFile(const std::string& path, std::string_view bytes) {
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
  return std::fclose(out) == 0 && ok;
}

template <typename Counts>
std::string Int64s(const Counts& counts) {
  std::string out;
  for (int64_t c : counts) out.append(reinterpret_cast<const char*>(&c), sizeof(c));
  return out;
}

// The arrays of an inline batch, one file each (see the header comment).
bool Dump(const std::string& dir, size_t k, const graphshard::v1::Minibatch& b) {
  const std::string stem = dir + "/s" + std::to_string(k) + "_e" + std::to_string(b.epoch()) +
                           "_b" + std::to_string(b.batch_index()) + "_";
  bool ok = true;
  for (int i = 0; i < b.nodes_size(); ++i) {
    const auto& n = b.nodes(i);
    const std::string p = stem + "n" + std::to_string(i) + "_";
    ok = ok && WriteFile(p + "ids", n.ids().data()) &&
         WriteFile(p + "features", n.features().data()) &&
         WriteFile(p + "labels", n.labels().data()) &&
         WriteFile(p + "num_sampled", Int64s(n.num_sampled_nodes()));
  }
  for (int j = 0; j < b.edges_size(); ++j) {
    const auto& e = b.edges(j);
    const std::string p = stem + "e" + std::to_string(j) + "_";
    ok = ok && WriteFile(p + "src", e.src().data()) && WriteFile(p + "dst", e.dst().data()) &&
         WriteFile(p + "num_sampled", Int64s(e.num_sampled_edges()));
  }
  return ok;
}

std::string Hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// Digest of server k's stream over its whole train split; -1 batches on failure (printed).
int64_t DigestServer(const Flags& f, size_t k, uint64_t& digest) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // inline batches of wide features exceed gRPC's 4 MB
  auto stub = graphshard::v1::PartitionService::NewStub(
      grpc::CreateCustomChannel(f.servers[k], grpc::InsecureChannelCredentials(), args));
  auto deadline = [&] {
    return std::chrono::system_clock::now() + std::chrono::seconds(f.timeout_s);
  };
  graphshard::v1::GetSplitRequest split_req;
  split_req.set_split("train");
  graphshard::v1::GetSplitResponse split;
  grpc::ClientContext split_ctx;
  split_ctx.set_deadline(deadline());
  grpc::Status s = stub->GetSplit(&split_ctx, split_req, &split);
  if (!s.ok()) {
    std::fprintf(stderr, "batch_digest: GetSplit to server %zu (%s): %s\n", k,
                 f.servers[k].c_str(), s.error_message().c_str());
    return -1;
  }
  graphshard::v1::StreamBatchesRequest req;
  req.set_seeds(split.ids());
  req.set_batch_size(f.batch_size);
  req.set_shuffle(true);
  req.set_shuffle_seed(f.shuffle_seeds.empty() ? 7 + k : f.shuffle_seeds[k]);
  req.set_epoch(f.first_epoch);
  req.set_num_epochs(f.epochs);
  for (int32_t x : f.fanouts) req.mutable_sampling()->add_fanouts(x);
  req.mutable_sampling()->set_disjoint(f.disjoint);
  req.mutable_sampling()->set_feature_dtype(f.dtype);
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline());
  auto reader = stub->StreamBatches(&ctx, req);
  graphshard::v1::Minibatch batch;
  int64_t n = 0;
  while (reader->Read(&batch)) {
    Fnv(digest, Deterministic(batch));
    if (!f.dump_dir.empty() && !Dump(f.dump_dir, k, batch)) {
      std::fprintf(stderr, "batch_digest: cannot write batch files under %s\n",
                   f.dump_dir.c_str());
      return -1;
    }
    ++n;
  }
  s = reader->Finish();
  if (!s.ok()) {
    std::fprintf(stderr, "batch_digest: StreamBatches to server %zu (%s): %s\n", k,
                 f.servers[k].c_str(), s.error_message().c_str());
    return -1;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, f)) {
    std::fprintf(stderr,
                 "usage: batch_digest --servers host:port,... [--epochs E] [--batch-size B] "
                 "[--fanouts 10,5] [--dtype float32|float16|bfloat16] [--disjoint] "
                 "[--timeout-s S] [--first-epoch E0] [--shuffle-seeds S0,S1,...] [--dump DIR]\n");
    return 2;
  }
  uint64_t all = 1469598103934665603ull;
  for (size_t k = 0; k < f.servers.size(); ++k) {
    uint64_t digest = 1469598103934665603ull;
    int64_t n = DigestServer(f, k, digest);
    if (n < 0) return 1;
    std::printf("server %zu digest %s batches %lld\n", k, Hex(digest).c_str(),
                static_cast<long long>(n));
    Fnv(all, Hex(digest));
  }
  std::printf("all %s\n", Hex(all).c_str());
  return 0;
}
