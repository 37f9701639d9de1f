#include "partitioner/cli.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "common/flags.h"
#include "common/progress.h"
#include "partitioner/edge_split.h"
#include "partitioner/generate.h"
#include "partitioner/generate_papers.h"
#include "partitioner/inspect.h"
#include "partitioner/internal/progress.h"
#include "partitioner/partition.h"
#include "partitioner/read_input.h"
#include "partitioner/tu_dataset.h"
#include "partitioner/write_input.h"

namespace graphshard::partitioner {
namespace {

// The parsed flags of one subcommand: values by flag name, the booleans given, the operands.
struct ParsedArgs {
  std::map<std::string, std::string> values;
  std::set<std::string> bools;
  std::vector<std::string> positional;
  bool help = false;  // --help / -h: print the subcommand's usage, exit 0
};

// A subcommand's flags, in the order its usage lists them. Defaults live in the options structs
// (generate.h, partition.h, read_input.h) and are applied only for flags given, so a valued
// flag's default is part of its help text.
struct FlagSpec {
  struct Valued {
    std::string name, value_name, help;
  };
  struct Boolean {
    std::string name, help;
  };
  std::string synopsis;
  std::vector<Valued> valued;
  std::vector<Boolean> boolean;
};

// The subcommand's common::FlagSet, bound to `parsed` (values) and `bools` (booleans).
std::unique_ptr<common::FlagSet> MakeFlagSet(const FlagSpec& spec, ParsedArgs& parsed,
                                             std::map<std::string, bool>& bools) {
  auto flags = std::make_unique<common::FlagSet>(
      spec.synopsis, common::FlagSetOptions{.allow_operands = true});
  for (const FlagSpec::Valued& v : spec.valued) {
    flags->AddCustom(v.name, v.value_name, v.help, "",
                     [&parsed, name = v.name](absl::string_view value) {
                       parsed.values[name] = std::string(value);
                       return absl::OkStatus();
                     });
  }
  for (const FlagSpec::Boolean& b : spec.boolean) flags->AddBool(b.name, &bools[b.name], b.help);
  return flags;
}

std::string SpecUsage(const FlagSpec& spec) {
  ParsedArgs unused;
  std::map<std::string, bool> bools;
  return MakeFlagSet(spec, unused, bools)->Usage();
}

// args[first..] of one subcommand.
absl::Status ParseArgs(const std::vector<std::string>& args, size_t first, const FlagSpec& spec,
                       ParsedArgs& parsed) {
  std::map<std::string, bool> bools;
  std::unique_ptr<common::FlagSet> flags = MakeFlagSet(spec, parsed, bools);
  absl::StatusOr<common::ParsedArgs> result =
      flags->Parse(absl::MakeConstSpan(args).subspan(std::min(first, args.size())));
  if (!result.ok()) return result.status();
  parsed.help = result->help;
  parsed.positional = std::move(result->operands);
  for (const auto& [name, on] : bools) {
    if (on) parsed.bools.insert(name);
  }
  return absl::OkStatus();
}

FlagSpec GenerateSpec() {
  return {
      "  graphshard-partition generate --kind products|mag|graphs|ratings|papers --seed S --out DIR "
      "[flags]",
      {{"kind", "products|mag|graphs|ratings|papers",
        "what to generate (required); ratings: users rating items over time;\n"
        "papers: ogbn-papers100M-shaped, npy layout, streamed (--scale F)"},
       {"seed", "S", "seed; the output is a function of it (required)"},
       {"out", "DIR", "output folder, written atomically (required)"},
       {"format", "ogb|npy|tu", "ogb (default) or npy; tu for --kind graphs; npy for ratings"},
       {"num-nodes", "N", "nodes (default: 20000; mag: papers; ratings: users)"},
       {"num-items", "I", "ratings: items (default: max(20, users / 2))"},
       {"avg-degree", "D", "average degree (default: 10; ratings: per user)"},
       {"num-edges", "M", "edges instead of --avg-degree"},
       {"num-features", "F", "feature dimension (default: 32)"},
       {"num-classes", "C", "classes (default: 8)"},
       {"scale", "full|F", "ogbn-products' or ogbn-mag's sizes: products 2,449,029 nodes,\n"
                           "61,859,140 undirected edges, 100 features, 47 classes; mag\n"
                           "736,389 papers (1.94 M nodes), 128 features, 349 classes;\n"
                           "papers: F x ogbn-papers100M (111 M nodes, 1.6 B citations,\n"
                           "128 features, 172 classes; full = 1; default 0.01)"},
       {"threads", "T", "papers: worker threads (default: all hardware threads)"},
       {"num-graphs", "G", "graphs (TU layout, 2 classes): number of graphs (default: 1000)"},
       {"min-nodes", "A", "graphs: fewest nodes of a graph (default: 10)"},
       {"max-nodes", "B", "graphs: most nodes of a graph (default: 30)"}},
      {}};
}

FlagSpec PartitionSpec() {
  return {
      "  graphshard-partition partition --input PATH --parts K --out DIR [flags]\n"
      "      tu (graph classification): whole graphs per part, --method random, an 80/10/10\n"
      "      split of the graphs drawn with --seed",
      {{"input", "PATH", "input dataset (required)"},
       {"parts", "K", "number of parts (required)"},
       {"out", "DIR", "partition folder, written atomically (required)"},
       {"method", "random|metis|stream",
        "partitioning method (default: random); stream: restreaming greedy over the edge\n"
        "list, locality like METIS's in O(nodes x parts) memory, any graph size"},
       {"stream-passes", "R",
        "--method stream: most passes over the edges; stops sooner once a pass\n"
        "moves at most 0.1% of the nodes (default: 32)"},
       {"threads", "T", "worker threads for the edge passes (default: all hardware threads)"},
       {"seed", "S", "seed (default: 0)"},
       {"split", "NAME", "the folder under split/ to use (needed when there are several)"},
       {"format", "ogb|ogb-hetero|npy|npy-hetero|edgelist|tu", "input layout (default: detected)"},
       {"num-nodes", "N", "edge lists only: number of nodes"},
       {"features", "FILE", "edge lists only: node features"},
       {"labels", "FILE", "edge lists only: node labels"},
       {"train-idx", "FILE", "edge lists only: training nodes"},
       {"val-idx", "FILE", "edge lists only: validation nodes"},
       {"test-idx", "FILE", "edge lists only: test nodes"},
       {"progress-every-s", "S",
        "progress lines on stderr: one every S seconds when stderr is not a terminal\n"
        "(on a terminal one line redrawn in place; default: 10)"},
       {"edge-split", "TRAIN,VAL,TEST",
        "link prediction: split the target edge type's edges (e.g. 0.85,0.05,0.10), seeded by\n"
        "--seed; val/test edges leave the message-passing graph"},
       {"target-edge-type", "SRC__REL__DST",
        "the edge type --edge-split splits (default: the only one)"},
       {"edge-split-order", "auto|random|time",
        "--edge-split's cut: time = chronological (train earliest, test latest),\n"
        "random = seeded shuffle; auto (default): time when the edge type has\n"
        "edge times. Timed edges keep their times (edge_splits/*/<split>_time.npy)"},
       {"reverse-edge-type", "DST__REL__SRC",
        "the edge type holding the target's edges reversed, split with it\n"
        "(default: DST__rev_REL__SRC when present, as --undirected adds)"}},
      {{"undirected", "add the reverse of every edge"},
       {"dedup", "drop duplicate edges"},
       {"drop-self-loops", "drop self loops"},
       {"force", "replace an existing --out"},
       {"allow-nonfinite", "keep NaN / Inf feature values (refused by default)"},
       {"quiet", "no progress lines on stderr"}}};
}

FlagSpec InspectSpec() {
  return {
      "  graphshard-partition inspect DIR [flags]",
      {},
      {{"json", "print JSON instead of text"},
       {"no-verify", "skip the checksum verification"}}};
}

absl::Status Require(const ParsedArgs& p, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (!p.values.count(n))
      return absl::InvalidArgumentError(absl::StrCat("--", n, " is required"));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status GetNumber(const ParsedArgs& p, const std::string& name, T* out) {
  auto it = p.values.find(name);
  if (it == p.values.end()) return absl::OkStatus();
  bool ok;
  if constexpr (std::is_floating_point_v<T>) {
    ok = absl::SimpleAtod(it->second, out);
  } else {
    ok = absl::SimpleAtoi(it->second, out);
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": \"", it->second, "\" is not a valid number"));
  }
  return absl::OkStatus();
}

// Either a usage problem (exit 2) or a failure of the work (exit 1); or, with code kExitOk and
// a message, help to print on stdout.
struct CliError {
  int code = kExitOk;
  std::string message;
};

CliError Help(const FlagSpec& spec) { return {kExitOk, SpecUsage(spec)}; }

CliError Usage(const absl::Status& s) { return {kExitUsage, std::string(s.message())}; }
CliError Failure(const absl::Status& s) { return {kExitFailure, std::string(s.message())}; }

#define CLI_USAGE_IF_ERROR(expr)                      \
  do {                                                \
    absl::Status cli_status_ = (expr);                \
    if (!cli_status_.ok()) return Usage(cli_status_); \
  } while (0)

absl::Status WriteGenerated(const GenerateOptions& o, const std::string& format,
                            const std::string& dir, std::ostream& out) {
  if (o.kind == "graphs") {
    auto graphs = GenerateGraphs(o.graphs);
    if (!graphs.ok()) return graphs.status();
    absl::Status s = WriteTuDataset(*graphs, dir);
    if (!s.ok()) return s;
    out << "generated graphs: " << graphs->num_graphs() << " graphs (2 classes), "
        << graphs->num_nodes << " nodes, " << graphs->src.size() << " directed edges (TU layout, "
        << graphs->name << "_*.txt) -> " << dir << "\n";
    return absl::OkStatus();
  }
  if (o.kind == "ratings") {
    auto graph = GenerateRatings(o);
    if (!graph.ok()) return graph.status();
    absl::Status s = WriteNpyInput(*graph, dir);
    if (!s.ok()) return s;
    out << "generated ratings: " << graph->node_types[1].num_nodes << " users, "
        << graph->node_types[0].num_nodes << " items, " << graph->edge_types[0].num_edges()
        << " timestamped ratings (and their reverse edges) -> " << dir << "\n";
    return absl::OkStatus();
  }
  if (o.kind == "mag") {
    auto graph = GenerateMag(o);
    if (!graph.ok()) return graph.status();
    absl::Status s =
        format == "npy" ? WriteNpyInput(*graph, dir) : WriteOgbHeterogeneous(*graph, dir, "random");
    if (!s.ok()) return s;
    out << "generated mag: " << graph->TotalNodes() << " nodes of " << graph->node_types.size()
        << " types, " << graph->TotalEdges() << " edges of " << graph->edge_types.size()
        << " types -> " << dir << "\n";
    return absl::OkStatus();
  }
  auto graph = Generate(o);
  if (!graph.ok()) return graph.status();
  const int64_t undirected_edges = graph->TotalEdges();
  absl::Status s;
  if (format == "npy") {  // PyG style: both directions in edge_index.npy
    EdgeTransformOptions undirected;
    undirected.undirected = true;
    s = TransformEdges(*graph, undirected);
    if (s.ok()) s = WriteNpyInput(*graph, dir);
    if (!s.ok()) return s;
    out << "generated products: " << graph->TotalNodes() << " nodes, " << undirected_edges
        << " undirected edges (both directions in edge_index.npy) -> " << dir << "\n";
    return absl::OkStatus();
  }
  s = WriteOgbHomogeneous(*graph, dir, "random");
  if (!s.ok()) return s;
  const NodeTypeData& nodes = graph->node_types[0];
  out << "generated " << o.kind << ": " << nodes.num_nodes << " nodes, " << undirected_edges
      << " undirected edges, " << nodes.feat_dim << " features, " << nodes.num_classes
      << " classes -> " << dir << "\n";
  return absl::OkStatus();
}

// --kind papers: streamed straight to the npy layout (generate_papers.h); a summary line for
// people and one JSON line for scripts.
CliError RunGeneratePapers(ParsedArgs& p, std::ostream& out, std::ostream& err) {
  for (const char* flag : {"num-items", "avg-degree", "num-edges", "num-features", "num-classes",
                           "num-graphs", "min-nodes", "max-nodes"}) {
    if (p.values.count(flag)) {
      return Usage(absl::InvalidArgumentError(
          absl::StrCat("--", flag, " is not for --kind papers (its shape is papers100M's: use "
                       "--scale F)")));
    }
  }
  if (p.values.count("format") && p.values["format"] != "npy") {
    return Usage(absl::InvalidArgumentError("--kind papers writes the npy layout only"));
  }
  PapersOptions o;
  CLI_USAGE_IF_ERROR(GetNumber(p, "seed", &o.seed));
  CLI_USAGE_IF_ERROR(GetNumber(p, "num-nodes", &o.num_nodes));
  CLI_USAGE_IF_ERROR(GetNumber(p, "threads", &o.threads));
  if (p.values.count("scale") && p.values["scale"] != "full") {
    CLI_USAGE_IF_ERROR(GetNumber(p, "scale", &o.scale));
  } else if (p.values.count("scale")) {
    o.scale = 1.0;
  }
  o.log = &err;
  const std::string dir = p.values["out"];
  auto stats = GeneratePapers(o, dir);
  if (!stats.ok()) {
    std::error_code ec;
    return stats.status().code() == absl::StatusCode::kInvalidArgument &&
                   !std::filesystem::exists(dir, ec)
               ? Usage(stats.status())
               : Failure(stats.status());
  }
  const PapersStats& s = *stats;
  out << absl::StrFormat(
      "generated papers: %d nodes, %d citations (%d directed edges in edge_index.npy), "
      "%d features, %d classes; degree mean %.1f, median %d, p99 %d, max %d, isolated %d; "
      "train %d, val %d, test %d; %.1f s on %d threads -> %s\n",
      s.num_nodes, s.citations, 2 * s.citations, kPapersFeatures, kPapersClasses, s.mean_degree,
      s.median_degree, s.p99_degree, s.max_degree, s.isolated, s.train, s.val, s.test, s.seconds,
      s.threads, dir);
  nlohmann::json j = {{"kind", "papers"},          {"nodes", s.num_nodes},
                      {"citations", s.citations},  {"directed_edges", 2 * s.citations},
                      {"features", kPapersFeatures}, {"classes", kPapersClasses},
                      {"mean_degree", s.mean_degree}, {"median_degree", s.median_degree},
                      {"p99_degree", s.p99_degree}, {"max_degree", s.max_degree},
                      {"isolated", s.isolated},    {"train", s.train},
                      {"val", s.val},              {"test", s.test},
                      {"seconds", s.seconds},      {"threads", s.threads}};
  out << j.dump() << "\n";
  return {};
}

CliError RunGenerate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ParsedArgs p;
  CLI_USAGE_IF_ERROR(ParseArgs(args, 1, GenerateSpec(), p));
  if (p.help) return Help(GenerateSpec());
  if (!p.positional.empty()) return Usage(absl::InvalidArgumentError("generate takes no operands"));
  CLI_USAGE_IF_ERROR(Require(p, {"kind", "seed", "out"}));
  if (p.values["kind"] == "papers") return RunGeneratePapers(p, out, err);
  if (p.values.count("threads")) {
    return Usage(absl::InvalidArgumentError("--threads is for --kind papers"));
  }
  GenerateOptions o;
  CLI_USAGE_IF_ERROR(GetNumber(p, "seed", &o.seed));
  if (p.values.count("scale")) {
    if (p.values["scale"] != "full" || (p.values["kind"] != "products" && p.values["kind"] != "mag")) {
      return Usage(absl::InvalidArgumentError("--scale full is for --kind products or mag"));
    }
    o = p.values["kind"] == "mag" ? MagFullScale(o.seed) : ProductsFullScale(o.seed);
  }
  o.kind = p.values["kind"];
  if (o.kind != "products" && o.kind != "mag" && o.kind != "graphs" && o.kind != "ratings") {
    return Usage(absl::InvalidArgumentError(
        absl::StrCat("unknown --kind \"", o.kind, "\" (products, mag, graphs, ratings)")));
  }
  if (p.values.count("num-items") && o.kind != "ratings") {
    return Usage(absl::InvalidArgumentError("--num-items is for --kind ratings"));
  }
  CLI_USAGE_IF_ERROR(GetNumber(p, "num-items", &o.num_items));
  const bool graph_flags =
      p.values.count("num-graphs") || p.values.count("min-nodes") || p.values.count("max-nodes");
  if (graph_flags && o.kind != "graphs") {
    return Usage(
        absl::InvalidArgumentError("--num-graphs, --min-nodes and --max-nodes are for --kind graphs"));
  }
  for (const char* flag : {"num-nodes", "avg-degree", "num-edges", "num-features", "num-classes"}) {
    if (o.kind == "graphs" && p.values.count(flag)) {
      return Usage(absl::InvalidArgumentError(
          absl::StrCat("--", flag, " is not for --kind graphs (--num-graphs, --min-nodes, "
                       "--max-nodes)")));
    }
  }
  o.graphs.seed = o.seed;
  CLI_USAGE_IF_ERROR(GetNumber(p, "num-graphs", &o.graphs.num_graphs));
  CLI_USAGE_IF_ERROR(GetNumber(p, "min-nodes", &o.graphs.min_nodes));
  CLI_USAGE_IF_ERROR(GetNumber(p, "max-nodes", &o.graphs.max_nodes));
  CLI_USAGE_IF_ERROR(GetNumber(p, "num-nodes", &o.num_nodes));
  CLI_USAGE_IF_ERROR(GetNumber(p, "avg-degree", &o.avg_degree));
  CLI_USAGE_IF_ERROR(GetNumber(p, "num-edges", &o.num_edges));
  CLI_USAGE_IF_ERROR(GetNumber(p, "num-features", &o.num_features));
  CLI_USAGE_IF_ERROR(GetNumber(p, "num-classes", &o.num_classes));
  const std::string format =
      p.values.count("format") ? p.values["format"] : (o.kind == "ratings" ? "npy" : "ogb");
  if (o.kind == "ratings" && format != "npy") {
    return Usage(absl::InvalidArgumentError(
        "--kind ratings writes the npy layout only (--format npy: it keeps the times)"));
  }
  if (format != "ogb" && format != "npy" && !(format == "tu" && o.kind == "graphs")) {
    return Usage(absl::InvalidArgumentError("--format must be ogb or npy (tu for --kind graphs)"));
  }
  if (o.kind == "graphs" && p.values.count("format") && format != "tu") {
    return Usage(absl::InvalidArgumentError("--kind graphs writes the TU layout only (--format tu)"));
  }
  absl::Status s = absl::OkStatus();
  {
    // The generators do not report a position: elapsed time while it lasts (full scale takes
    // minutes), every 10 s.
    internal::Heartbeat generating(&err, absl::StrCat("generate ", o.kind), 10);
    s = WriteGenerated(o, format, p.values["out"], out);
  }
  if (s.ok()) return {};
  // Option checks fail before anything is written; everything else is a failure of the work.
  std::error_code ec;
  return s.code() == absl::StatusCode::kInvalidArgument &&
                 !std::filesystem::exists(p.values["out"], ec)
             ? Usage(s)
             : Failure(s);
}

// The reader's options from the flags, with the layout detected (or given by --format).
CliError ParseReadOptions(ParsedArgs& p, ReadOptions& read) {
  read.format = p.values["format"];
  read.split_name = p.values["split"];
  CLI_USAGE_IF_ERROR(GetNumber(p, "num-nodes", &read.num_nodes));
  read.features = p.values["features"];
  read.labels = p.values["labels"];
  read.train_idx = p.values["train-idx"];
  read.val_idx = p.values["val-idx"];
  read.test_idx = p.values["test-idx"];
  if (read.format.empty()) {
    absl::StatusOr<std::string> layout = DetectLayout(p.values["input"]);
    if (!layout.ok()) return Failure(layout.status());
    read.format = *layout;
  }
  const bool edge_list_flags = !read.features.empty() || !read.labels.empty() ||
                               !read.train_idx.empty() || !read.val_idx.empty() ||
                               !read.test_idx.empty() || read.num_nodes >= 0;
  if (edge_list_flags && read.format != "edgelist") {
    return Usage(absl::InvalidArgumentError(absl::StrCat(
        "--features, --labels, --*-idx and --num-nodes are for edge lists; the input is ",
        read.format)));
  }
  return {};
}

// Reads the input and applies --undirected / --dedup / --drop-self-loops.
absl::StatusOr<Graph> LoadInput(const ParsedArgs& p, const ReadOptions& read) {
  auto graph = ReadGraph(p.values.at("input"), read);
  if (!graph.ok()) return graph.status();
  EdgeTransformOptions transform;
  transform.undirected = p.bools.count("undirected") > 0;
  if (transform.undirected && IsGraphDataset(*graph)) {
    return absl::InvalidArgumentError(
        "--undirected does not apply to a TU graph-classification dataset: its A.txt already "
        "lists both directions of an undirected graph");
  }
  transform.dedup = p.bools.count("dedup") > 0;
  transform.drop_self_loops = p.bools.count("drop-self-loops") > 0;
  if (transform.undirected || transform.dedup || transform.drop_self_loops) {
    absl::Status s = TransformEdges(*graph, transform);
    if (!s.ok()) return s;
  }
  return graph;
}

CliError RunPartition(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ParsedArgs p;
  CLI_USAGE_IF_ERROR(ParseArgs(args, 1, PartitionSpec(), p));
  if (p.help) return Help(PartitionSpec());
  if (!p.positional.empty()) {
    return Usage(absl::InvalidArgumentError("partition takes no operands"));
  }
  CLI_USAGE_IF_ERROR(Require(p, {"input", "parts", "out"}));
  PartitionOptions o;
  CLI_USAGE_IF_ERROR(GetNumber(p, "parts", &o.num_parts));
  CLI_USAGE_IF_ERROR(GetNumber(p, "seed", &o.seed));
  if (p.values.count("method")) o.method = p.values["method"];
  if (o.method != "random" && o.method != "metis" && o.method != "stream") {
    return Usage(absl::InvalidArgumentError(
        absl::StrCat("--method ", o.method, ": expected random, metis or stream")));
  }
  CLI_USAGE_IF_ERROR(GetNumber(p, "stream-passes", &o.stream_passes));
  if (o.stream_passes < 1 || o.stream_passes > 1000) {
    return Usage(absl::InvalidArgumentError("--stream-passes must be in [1, 1000]"));
  }
  if (o.num_parts < 1) return Usage(absl::InvalidArgumentError("--parts must be at least 1"));
  CLI_USAGE_IF_ERROR(GetNumber(p, "threads", &o.threads));
  if (o.threads < 0 || o.threads > 4096) {
    return Usage(absl::InvalidArgumentError("--threads must be in [0, 4096] (0 = all)"));
  }
  o.force = p.bools.count("force") > 0;
  o.allow_nonfinite = p.bools.count("allow-nonfinite") > 0;
  if (!p.bools.count("quiet")) o.log = &err;
  // The line is redrawn in place only on a terminal: stderr is one when the CLI writes to it.
  o.log_is_terminal = &err == &std::cerr && common::IsTerminal(2);
  CLI_USAGE_IF_ERROR(GetNumber(p, "progress-every-s", &o.progress_every_s));
  if (!(o.progress_every_s > 0)) {
    return Usage(absl::InvalidArgumentError("--progress-every-s must be > 0"));
  }
  std::error_code ec;
  if (!o.force && std::filesystem::exists(p.values["out"], ec)) {
    return Failure(absl::InvalidArgumentError(
        absl::StrCat(p.values["out"], ": already exists (pass --force to replace it)")));
  }
  ReadOptions read;
  read.split_seed = o.seed;
  CliError e = ParseReadOptions(p, read);
  if (e.code != kExitOk) return e;
  absl::StatusOr<Graph> graph = absl::UnknownError("not read");
  {
    // The readers do not report their position: elapsed time only, while it lasts.
    internal::Heartbeat reading(o.log, absl::StrCat("read ", p.values["input"]),
                                o.progress_every_s);
    graph = LoadInput(p, read);
  }
  if (!graph.ok()) return Failure(graph.status());
  if (p.values.count("edge-split")) {
    EdgeSplitOptions split;
    CLI_USAGE_IF_ERROR(ParseEdgeSplit(p.values["edge-split"], split));
    split.seed = o.seed;
    split.edge_type = p.values["target-edge-type"];
    split.reverse_edge_type = p.values["reverse-edge-type"];
    if (p.values.count("edge-split-order")) {
      CLI_USAGE_IF_ERROR(ParseEdgeSplitOrder(p.values["edge-split-order"], split.order));
    }
    absl::Status s = SplitEdges(*graph, split);
    if (!s.ok()) return Failure(s);
  } else if (p.values.count("target-edge-type") || p.values.count("reverse-edge-type") ||
             p.values.count("edge-split-order")) {
    return Usage(absl::InvalidArgumentError(
        "--target-edge-type, --reverse-edge-type and --edge-split-order need --edge-split"));
  }
  auto manifest = PartitionGraph(*graph, o, p.values["out"]);
  if (!manifest.ok()) return Failure(manifest.status());
  out << "partitioned " << graph->TotalNodes() << " nodes, " << graph->TotalEdges() << " edges ("
      << read.format << ", " << graph->node_types.size() << " node types, "
      << graph->edge_types.size() << " edge types) into " << o.num_parts << " parts with "
      << o.method << " -> " << p.values["out"] << "\n";
  return {};
}

CliError RunInspect(const std::vector<std::string>& args, std::ostream& out) {
  ParsedArgs p;
  CLI_USAGE_IF_ERROR(ParseArgs(args, 1, InspectSpec(), p));
  if (p.help) return Help(InspectSpec());
  if (p.positional.size() != 1) {
    return Usage(absl::InvalidArgumentError("inspect takes exactly one folder"));
  }
  auto stats = InspectPartition(p.positional[0], p.bools.count("no-verify") == 0);
  if (!stats.ok()) return Failure(stats.status());
  out << (p.bools.count("json") ? FormatStatsJson(*stats) : FormatStatsText(*stats));
  return {};
}

}  // namespace

std::string Usage() {
  return absl::StrCat("usage:\n", SpecUsage(GenerateSpec()), SpecUsage(PartitionSpec()),
                      SpecUsage(InspectSpec()),
                      "  graphshard-partition SUBCOMMAND --help: that subcommand's flags\n"
                      "exit status: 0 ok, 1 failure, 2 bad command line\n");
}

int RunPartitionCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << "graphshard-partition: missing subcommand\n" << Usage();
    return kExitUsage;
  }
  const std::string& cmd = args[0];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    out << Usage();
    return kExitOk;
  }
  CliError e;
  if (cmd == "generate") {
    e = RunGenerate(args, out, err);
  } else if (cmd == "partition") {
    e = RunPartition(args, out, err);
  } else if (cmd == "inspect") {
    e = RunInspect(args, out);
  } else {
    e = {kExitUsage, absl::StrCat("unknown subcommand \"", cmd, "\"")};
  }
  if (e.code == kExitOk && !e.message.empty()) {  // the subcommand's --help
    out << "usage:\n" << e.message;
  } else if (e.code == kExitUsage) {
    err << "graphshard-partition " << cmd << ": " << e.message << "\n" << Usage();
  } else if (e.code != kExitOk) {
    err << "graphshard-partition " << cmd << ": error: " << e.message << "\n";
  }
  return e.code;
}

}  // namespace graphshard::partitioner
