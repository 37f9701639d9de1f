// graphshard._graphshard: the pybind11 binding of python/loader_core.h. Batches come back as
// arrays (ArrayView: the buffer protocol, no numpy C API) over the batch's own memory (the
// shared-memory segment, or the gRPC message for inline batches), each holding a capsule that
// owns the batch: the segment goes back to the server when the last array (or the numpy array
// and torch tensor data.py makes over it) is freed.
// The arrays are read-only (the mapping is): clone before writing in place. Python sees Torch
// only in graphshard/loader.py, so this module builds without LibTorch.
// A Status becomes graphshard.Error (a RuntimeError) with the status code's name and the
// message, which names the server. The GIL is released while a call waits on the network.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/optional.h"
#include "common/feature_dtype.h"
#include "python/cuda_host.h"
#include "python/loader_core.h"
#include "shm/ring.h"
#include "client/choices.h"
#include "client/epoch_plan.h"
#include "client/feature_rows.h"
#include "client/rendezvous.h"

namespace graphshard::python {
namespace {

namespace py = pybind11;

// Carries a Status to the registered Python exception.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(const absl::Status& s)
      : std::runtime_error(absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message())) {}
};

void ThrowIfError(const absl::Status& s) {
  if (!s.ok()) throw StatusError(s);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> s) {
  ThrowIfError(s.status());
  return *std::move(s);
}

client::FeatureDtype ParseDtype(const std::string& name) {
  absl::StatusOr<client::FeatureDtype> dtype = common::ParseFeatureDtype(name);
  if (!dtype.ok()) throw py::value_error(absl::StrCat("feature_dtype: ", dtype.status().message()));
  return *dtype;
}

// An element type as PEP 3118 (the struct module) names it. Feature rows in bfloat16 are carried
// as int16 ("h"; data.py views them as torch.bfloat16): no format code names bfloat16.
struct Element {
  const char* format;
  py::ssize_t size;
};
constexpr Element kInt64{"q", 8};
constexpr Element kFloat32{"f", 4};

Element FeatureElement(client::FeatureDtype d) {
  switch (d) {
    case client::FeatureDtype::kFloat16:
      return {"e", 2};
    case client::FeatureDtype::kBFloat16:
      return {"h", 2};
    case client::FeatureDtype::kFloat32:
      break;
  }
  return {"f", 4};
}

// A read-only n-d array over memory that another object owns, handed to Python through the buffer
// protocol (PEP 3118), not numpy's C API: numpy reads it with its own code (np.asarray in
// data.py), so the module works with whatever NumPy the caller has. (pybind11's numpy.h, before
// 2.12, reads NumPy 2's dtype objects wrongly: its arrays reported 0 bytes there.) `base` keeps
// the owner alive (the batch's capsule); `copy` owns the bytes when they had to be copied.
struct ArrayView {
  const void* data = nullptr;
  Element element = kInt64;
  std::vector<py::ssize_t> shape;
  std::vector<py::ssize_t> strides;  // in bytes
  py::object base;
  std::shared_ptr<char[]> copy;
};

std::vector<py::ssize_t> RowMajorStrides(const std::vector<py::ssize_t>& shape, py::ssize_t item) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t step = item;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

// A view of `bytes` new bytes of its own (uninitialised), for the caller to fill.
ArrayView OwnedArray(Element element, std::vector<py::ssize_t> shape, size_t bytes) {
  ArrayView v;
  v.copy = std::shared_ptr<char[]>(new char[std::max<size_t>(bytes, 8)]);
  v.data = v.copy.get();
  v.element = element;
  v.strides = RowMajorStrides(shape, element.size);
  v.shape = std::move(shape);
  return v;
}

// A read-only array of `shape` over `view`, kept alive by `base` (the batch's capsule). Copied
// when the bytes are not aligned for the element type (inline protobuf bytes need not be).
ArrayView Over(const client::ByteView& view, Element element, std::vector<py::ssize_t> shape,
               const py::object& base) {
  const auto item = static_cast<uintptr_t>(element.size);
  if (view.size == 0 || reinterpret_cast<uintptr_t>(view.data) % item != 0) {
    ArrayView copy = OwnedArray(element, std::move(shape), view.size);
    if (view.size > 0) std::memcpy(copy.copy.get(), view.data, view.size);
    return copy;
  }
  ArrayView v;
  v.data = view.data;
  v.element = element;
  v.strides = RowMajorStrides(shape, element.size);
  v.shape = std::move(shape);
  v.base = base;
  return v;
}

// edge_index [2, E] (row 0 src, row 1 dst, PyG's order). Without a copy when dst lies after src
// at a multiple of 8 bytes (the same segment): one array with a row stride of dst - src.
ArrayView EdgeIndex(const client::EdgeBlockData& e, const py::object& base) {
  const auto src = reinterpret_cast<uintptr_t>(e.src.data);
  const auto dst = reinterpret_cast<uintptr_t>(e.dst.data);
  const std::vector<py::ssize_t> shape{2, static_cast<py::ssize_t>(e.num_edges)};
  if (e.num_edges > 0 && src % 8 == 0 && dst > src && (dst - src) % 8 == 0) {
    ArrayView v;
    v.data = e.src.data;
    v.shape = shape;
    v.strides = {static_cast<py::ssize_t>(dst - src), py::ssize_t{8}};
    v.base = base;
    return v;
  }
  ArrayView v = OwnedArray(kInt64, shape, e.src.size + e.dst.size);
  if (e.num_edges > 0) {
    std::memcpy(v.copy.get(), e.src.data, e.src.size);
    std::memcpy(v.copy.get() + e.src.size, e.dst.data, e.dst.size);
  }
  return v;
}

py::dict BatchToPython(client::MinibatchData batch, int part) {
  // One capsule per batch owns it; every array holds the capsule.
  auto* owner = new std::shared_ptr<const void>(std::move(batch.owner));
  py::capsule base(owner, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  const Element feature = FeatureElement(batch.feature_dtype);
  py::list nodes;
  for (const client::NodeBlockData& n : batch.nodes) {
    py::dict d;
    d["type"] = n.node_type;
    d["ids"] = py::cast(Over(n.ids, kInt64, {n.num_nodes}, base));
    // Without rows (feature_store="device"): None; loader.py gathers them from its copy.
    d["x"] = batch.features_omitted
                 ? py::object(py::none())
                 : py::cast(Over(n.features, feature, {n.num_nodes, n.feat_dim}, base));
    d["y"] = py::cast(Over(n.labels, kInt64, {n.num_nodes}, base));
    d["num_sampled_nodes"] = n.num_sampled_nodes;
    nodes.append(d);
  }
  py::list edges;
  for (const client::EdgeBlockData& e : batch.edges) {
    py::dict d;
    d["type"] = e.edge_type;
    d["src_block"] = e.src_block;
    d["dst_block"] = e.dst_block;
    d["edge_index"] = py::cast(EdgeIndex(e, base));
    d["num_sampled_edges"] = e.num_sampled_edges;
    edges.append(d);
  }
  py::dict out;
  if (!batch.link.edge_type.empty()) {  // a link batch: its supervision edges
    const client::LinkLabelData& l = batch.link;
    py::dict d;
    d["type"] = l.edge_type;
    d["src_block"] = l.src_block;
    d["dst_block"] = l.dst_block;
    d["num_pos"] = l.num_pos;
    d["src"] = py::cast(Over(l.src, kInt64, {l.num_edges}, base));
    d["dst"] = py::cast(Over(l.dst, kInt64, {l.num_edges}, base));
    d["label"] = py::cast(Over(l.label, kFloat32, {l.num_edges}, base));
    out["link"] = d;
  }
  out["part"] = part;
  out["epoch"] = batch.epoch;
  out["batch_index"] = batch.batch_index;
  out["batch_size"] = batch.batch_size;
  out["seed_block"] = batch.seed_block;
  out["feature_dtype"] = std::string(common::FeatureDtypeName(batch.feature_dtype));
  out["features_omitted"] = batch.features_omitted;
  out["shared_memory"] = batch.shared_memory;
  out["nodes"] = nodes;
  out["edges"] = edges;
  return out;
}

py::dict MetadataToPython(const client::ServerMetadata& md) {
  py::list node_types;
  for (const client::NodeTypeInfo& t : md.node_types) {
    py::dict d;
    d["name"] = t.name;
    d["num_nodes"] = t.num_nodes;
    d["feat_dim"] = t.feat_dim;
    d["num_classes"] = t.num_classes;
    d["part_offsets"] = t.part_offsets;  // part p owns ids [offsets[p], offsets[p + 1])
    node_types.append(d);
  }
  py::list edge_types;
  for (const client::EdgeTypeInfo& e : md.edge_types) {
    py::dict d;
    d["name"] = e.name;
    d["src"] = md.node_types[static_cast<size_t>(e.src)].name;
    d["dst"] = md.node_types[static_cast<size_t>(e.dst)].name;
    py::dict splits;  // this part's supervision edges per split (link prediction)
    for (const auto& [split, n] : e.split_sizes) splits[py::str(split)] = n;
    d["split_sizes"] = splits;
    edge_types.append(d);
  }
  py::dict out;
  out["num_parts"] = md.num_parts;
  out["num_nodes"] = md.num_nodes;
  out["feat_dim"] = md.feat_dim;
  out["num_classes"] = md.num_classes;
  out["target_type"] = md.target_type;
  out["heterogeneous"] = md.heterogeneous();
  out["node_types"] = node_types;
  out["edge_types"] = edge_types;
  return out;
}

std::unique_ptr<LoaderCore> Connect(std::string registry, std::vector<std::string> servers,
                                    std::string split, std::vector<int32_t> fanouts,
                                    int64_t batch_size, bool shuffle, bool replace, uint64_t seed,
                                    const std::string& feature_dtype, int rank, int world_size,
                                    double server_wait_s, double rpc_timeout_s,
                                    int max_held_batches, const std::string& assignment,
                                    const std::string& feature_store, double stall_timeout_s) {
  LoaderOptions o;
  o.registry_dir = std::move(registry);
  o.servers = std::move(servers);
  o.split = std::move(split);
  o.fanouts = std::move(fanouts);
  o.batch_size = batch_size;
  o.shuffle = shuffle;
  o.replace = replace;
  o.seed = seed;
  o.feature_dtype = ParseDtype(feature_dtype);
  o.rank = rank;
  o.world_size = world_size;
  o.server_wait_s = server_wait_s;
  o.rpc_timeout_s = rpc_timeout_s;
  o.stall_timeout_s = stall_timeout_s;
  o.max_held_batches = max_held_batches;
  const absl::optional<client::Assignment> a = client::FromName<client::Assignment>(assignment);
  if (!a) {
    throw py::value_error(absl::StrCat(
        "assignment='", assignment, "': expected ",
        absl::StrJoin(client::NamesOf<client::Assignment>(), " or ")));
  }
  o.assignment = *a;
  const absl::optional<client::FeatureStoreKind> store =
      client::FromName<client::FeatureStoreKind>(feature_store);
  if (!store) {
    throw py::value_error(absl::StrCat(
        "feature_store='", feature_store, "': expected ",
        absl::StrJoin(client::NamesOf<client::FeatureStoreKind>(), " or ")));
  }
  // "auto" starts as "server"; loader.py decides once it knows the rows' size and the device
  // (set_without_features).
  o.without_features = *store == client::FeatureStoreKind::kDevice;
  absl::StatusOr<std::unique_ptr<LoaderCore>> core;
  {
    py::gil_scoped_release release;
    core = LoaderCore::Connect(o);
  }
  return ValueOrThrow(std::move(core));
}

// A 1-D int64 buffer (numpy's, C-contiguous or not) as a vector; ValueError naming `what`.
std::vector<int64_t> Int64Vector(const py::buffer& b, const char* what) {
  const py::buffer_info info = b.request();
  const std::string format = info.format;
  const char code = format.empty() ? '?' : format.back();
  if (info.ndim != 1 || info.itemsize != 8 || (code != 'q' && code != 'l')) {
    throw py::value_error(absl::StrCat(what, ": expected a 1-D int64 array, got ", info.ndim,
                                       "-D of format '", format, "'"));
  }
  std::vector<int64_t> out(static_cast<size_t>(info.shape[0]));
  const char* p = static_cast<const char*>(info.ptr);
  for (size_t i = 0; i < out.size(); ++i) {
    std::memcpy(&out[i], p + static_cast<py::ssize_t>(i) * info.strides[0], sizeof(int64_t));
  }
  return out;
}

// A new int64 array holding `ids`.
ArrayView Int64Array(const std::vector<int64_t>& ids) {
  ArrayView v = OwnedArray(kInt64, {static_cast<py::ssize_t>(ids.size())}, ids.size() * 8);
  if (!ids.empty()) std::memcpy(v.copy.get(), ids.data(), ids.size() * 8);
  return v;
}

py::dict Rendezvous() {
  client::RendezvousConfig c = ValueOrThrow(client::ParseRendezvous(client::ProcessEnv()));
  py::dict d;
  d["rank"] = c.rank;
  d["world_size"] = c.world_size;
  d["local_rank"] = c.local_rank;
  d["master_addr"] = c.master_addr;
  d["master_port"] = c.master_port;
  return d;
}

}  // namespace
}  // namespace graphshard::python

PYBIND11_MODULE(_graphshard, m) {
  namespace py = pybind11;
  // Arrays reach Python as ArrayView objects with the buffer protocol (np.asarray in data.py).
  py::class_<graphshard::python::ArrayView>(m, "ArrayView", py::buffer_protocol())
      .def_buffer([](graphshard::python::ArrayView& v) {
        return py::buffer_info(const_cast<void*>(v.data), v.element.size, v.element.format,
                               static_cast<py::ssize_t>(v.shape.size()), v.shape, v.strides,
                               /*readonly=*/true);
      });
  // A known array (int64 1, 2, 3), for the import-time check that this NumPy reads the module's
  // arrays right (graphshard/data.py).
  m.def("_probe_array", [] {
    static const int64_t kValues[3] = {1, 2, 3};
    graphshard::python::ArrayView v;
    v.data = kValues;
    v.shape = {3};
    v.strides = {8};
    return v;
  });
  m.attr("PYBIND11_VERSION") = absl::StrCat(PYBIND11_VERSION_MAJOR, ".", PYBIND11_VERSION_MINOR);

  using graphshard::python::LoaderCore;
  using graphshard::python::LoaderStep;
  m.doc() = "graphshard's client library (see graphshard.Loader).";
  py::register_exception<graphshard::python::StatusError>(m, "Error", PyExc_RuntimeError);
  m.def("host_id", &graphshard::shm::HostId,
        "This host's id, as servers and trainers compare it (shm::HostId).");
  m.def("stream_shuffle_seed", &graphshard::client::StreamShuffleSeed, py::arg("seed"),
        py::arg("part"), "The shuffle seed a training stream of `part` uses for run seed `seed`.");
  m.def("rendezvous", &graphshard::python::Rendezvous,
        "RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT as graphshard-trainer reads them "
        "(SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID as fallbacks).");
  py::class_<LoaderCore>(m, "Client")
      .def(py::init(&graphshard::python::Connect), py::arg("registry"), py::arg("servers"),
           py::arg("split"), py::arg("fanouts"), py::arg("batch_size"), py::arg("shuffle"),
           py::arg("replace"), py::arg("seed"), py::arg("feature_dtype"), py::arg("rank"),
           py::arg("world_size"), py::arg("server_wait_s"), py::arg("rpc_timeout_s"),
           py::arg("max_held_batches"), py::arg("assignment") = "part",
           py::arg("feature_store") = "server", py::arg("stall_timeout_s") = 30.0)
      .def("metadata",
           [](const LoaderCore& c) { return graphshard::python::MetadataToPython(c.metadata()); })
      .def("assign",
           [](LoaderCore& c, const std::vector<std::string>& rank_hosts) {
             absl::Status s;
             {
               py::gil_scoped_release release;
               s = c.Assign(rank_hosts);
             }
             graphshard::python::ThrowIfError(s);
           })
      .def("server_hosts", &LoaderCore::server_hosts)
      .def("shares",
           [](const LoaderCore& c) {
             py::list out;
             for (const auto& s : c.shares())
               out.append(py::make_tuple(s.part, s.chunk, s.num_chunks));
             return out;
           })
      // Page-locks the ring segments with the loaded CUDA runtime (python/cuda_host.h); before
      // the first epoch. False (nothing registered) without a loaded libcudart.
      .def("register_cuda_host",
           [](LoaderCore& c) {
             absl::StatusOr<graphshard::shm::ShmRingReader::MapHooks> hooks =
                 graphshard::python::LoadedCudaHostRegisterHooks();
             if (!hooks.ok()) return false;
             c.SetRingMapHooks(*hooks);
             return true;
           })
      .def("set_without_features", &LoaderCore::SetWithoutFeatures, py::arg("without"))
      // feature_store="auto" for this loader's rows: graphshard-trainer's rule
      // (client::ResolveFeatureStore), given whether the device is a GPU and its free bytes.
      .def(
          "resolve_auto_feature_store",
          [](const LoaderCore& c, bool cuda, int64_t free_device_bytes) {
            namespace tr = graphshard::client;
            const tr::FeatureStoreKind kind = tr::ResolveFeatureStore(
                tr::FeatureStoreKind::kAuto, tr::Task::kNode, cuda,
                tr::FeatureTableBytes(c.metadata(), c.options().feature_dtype),
                cuda ? absl::optional<int64_t>(free_device_bytes) : absl::nullopt);
            return std::string(tr::NameOf(kind));
          },
          py::arg("cuda"), py::arg("free_device_bytes"))
      // Every feature row of node type `type` as a new array [num_nodes, feat_dim] in the feature
      // dtype (bfloat16 as int16), read from the servers (feature_store="device").
      .def("feature_rows",
           [](LoaderCore& c, int type) {
             const auto& types = c.metadata().node_types;
             if (type < 0 || type >= static_cast<int>(types.size())) {
               throw py::index_error(absl::StrCat("node type ", type, " of ", types.size()));
             }
             const auto& t = types[static_cast<size_t>(type)];
             const auto element = graphshard::python::FeatureElement(c.options().feature_dtype);
             int64_t bytes = 0;
             if (t.num_nodes < 0 || t.feat_dim < 0 ||
                 __builtin_mul_overflow(t.num_nodes, t.feat_dim, &bytes) ||
                 __builtin_mul_overflow(bytes, int64_t{element.size}, &bytes)) {
               throw py::value_error(absl::StrCat("node type '", t.name, "': ", t.num_nodes,
                                                  " rows x ", t.feat_dim, " do not fit memory"));
             }
             graphshard::python::ArrayView out = graphshard::python::OwnedArray(
                 element, {static_cast<py::ssize_t>(t.num_nodes), static_cast<py::ssize_t>(t.feat_dim)},
                 static_cast<size_t>(bytes));
             absl::Status s;
             {
               py::gil_scoped_release release;  // `out` is not shared yet
               s = c.FeatureRows(type, absl::MakeSpan(out.copy.get(), static_cast<size_t>(bytes)));
             }
             graphshard::python::ThrowIfError(s);
             return out;
           })
      // input_nodes: `ids` (a 1-D int64 buffer) of node type `seed_type` ("" = the target
      // type) seed the batches instead of the split; before assign.
      .def(
          "set_input_nodes",
          [](LoaderCore& c, const std::string& seed_type, const py::buffer& ids) {
            graphshard::python::ThrowIfError(
                c.SetInputNodes(seed_type, graphshard::python::Int64Vector(ids, "input_nodes")));
          },
          py::arg("seed_type"), py::arg("ids"))
      // Link prediction over edge type `edge_type`'s edge split; before assign.
      .def(
          "set_link",
          [](LoaderCore& c, const std::string& edge_type, int neg_ratio, bool degree_negatives) {
            graphshard::client::StreamOptions::Link link;
            link.edge_type = edge_type;
            link.neg_ratio = neg_ratio;
            link.degree_negatives = degree_negatives;
            graphshard::python::ThrowIfError(c.SetLink(link));
          },
          py::arg("edge_type"), py::arg("neg_ratio"), py::arg("degree_negatives"))
      // After assign: [(part, ids)] of this rank's seeds (node ids; link: edge split positions).
      .def("seed_ids",
           [](const LoaderCore& c) {
             py::list out;
             for (const auto& s : c.seeds()) {
               out.append(py::make_tuple(s.part, graphshard::python::Int64Array(s.ids)));
             }
             return out;
           })
      .def("natural_steps", &LoaderCore::natural_steps)
      .def("num_seeds", &LoaderCore::num_seeds)
      .def("start_epoch",
           [](LoaderCore& c, int64_t epoch, int64_t steps) {
             absl::Status s;
             {
               py::gil_scoped_release release;
               s = c.StartEpoch(epoch, steps);
             }
             graphshard::python::ThrowIfError(s);
           })
      // The next step: None past the last, {} for a step without a batch, else the batch.
      .def("next", [](LoaderCore& c) -> py::object {
        absl::StatusOr<LoaderStep> step;
        {
          py::gil_scoped_release release;
          step = c.Next();
        }
        LoaderStep s = graphshard::python::ValueOrThrow(std::move(step));
        if (s.end) return py::none();
        if (!s.batch.has_value()) return py::dict();
        return graphshard::python::BatchToPython(*std::move(s.batch), s.part);
      });
}
