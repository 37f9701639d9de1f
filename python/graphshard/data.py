"""Batches as PyG objects (torch_geometric.data.Data / HeteroData) or, without PyG, as plain
objects with the same field names. Tensors are made with torch.from_numpy over the arrays of
graphshard._graphshard, which lie in the batch's shared-memory segment: no copy. They are
read-only (the segment is mapped read-only): use .clone() before writing into them in place.
"""
import warnings

import numpy as np
import torch

from graphshard import _graphshard


def _check_numpy():
    """The module hands arrays over through the buffer protocol; a NumPy that reads them wrongly
    (the failure a NumPy-ABI-bound build showed: 0-byte arrays) is refused at import, naming the
    versions, instead of failing later on a batch."""
    probe = np.asarray(_graphshard._probe_array())
    if probe.dtype != np.int64 or probe.nbytes != 24 or probe.tolist() != [1, 2, 3]:
        raise ImportError(
            f"graphshard: NumPy {np.__version__} reads the module's arrays wrongly (got dtype "
            f"{probe.dtype}, {probe.nbytes} bytes, {probe.tolist()}; module built with pybind11 "
            f"{_graphshard.PYBIND11_VERSION}); rebuild graphshard against this Python's NumPy")


_check_numpy()

try:  # PyG is optional: only the output type depends on it.
    from torch_geometric.data import Data as _PygData
    from torch_geometric.data import HeteroData as _PygHeteroData
except ImportError:  # pragma: no cover - depends on the machine
    _PygData = None
    _PygHeteroData = None


def pyg_available():
    return _PygData is not None


# torch warns about every non-writable array given to from_numpy; the read-only contract is
# documented above. One filter for exactly that message (warnings.catch_warnings per call is not
# thread-safe, and the read-ahead thread makes tensors too).
warnings.filterwarnings("ignore", message="The given NumPy array is not writable",
                        category=UserWarning)


def _tensor(array):
    """A tensor over a module array (ArrayView, the buffer protocol), without a copy."""
    return torch.from_numpy(np.asarray(array))


def _features(array, dtype):
    t = _tensor(array)
    if dtype == "bfloat16":  # carried as int16 (numpy has no bfloat16)
        t = t.view(torch.bfloat16)
    return t


class _Store:
    """Attributes of one node or edge type (the plain stand-in for PyG's storages)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def keys(self):
        return list(self.__dict__)

    def __contains__(self, key):
        return key in self.__dict__

    def __repr__(self):
        return "{" + ", ".join(f"{k}={_short(v)}" for k, v in self.__dict__.items()) + "}"


def _short(v):
    if isinstance(v, torch.Tensor):
        return f"[{', '.join(str(s) for s in v.shape)}]"
    return repr(v)


def _move(v, device, non_blocking):
    return v.to(device, non_blocking=non_blocking) if isinstance(v, torch.Tensor) else v


class Batch(_Store):
    """A homogeneous batch without PyG: x, y, edge_index, n_id, batch_size, num_sampled_nodes,
    num_sampled_edges (PyG's NeighborLoader names), plus graphshard's part, epoch, batch_index."""

    def to(self, device, non_blocking=False):
        return Batch(**{k: _move(v, device, non_blocking) for k, v in self.__dict__.items()})

    @property
    def num_nodes(self):
        return int(self.n_id.shape[0])

    def __repr__(self):
        return "Batch(" + super().__repr__()[1:-1] + ")"


class HeteroBatch:
    """A heterogeneous batch without PyG: batch[node_type].x / .n_id / .y / .batch_size /
    .num_sampled_nodes, batch[(src, rel, dst)].edge_index / .num_sampled_edges, and the *_dict
    views of PyG's HeteroData."""

    def __init__(self, nodes, edges, **fields):
        self._nodes = nodes  # name -> _Store
        self._edges = edges  # (src, rel, dst) -> _Store
        self.__dict__.update(fields)

    def __getitem__(self, key):
        return self._nodes[key] if isinstance(key, str) else self._edges[tuple(key)]

    @property
    def node_types(self):
        return list(self._nodes)

    @property
    def edge_types(self):
        return list(self._edges)

    def _collect(self, stores, name):
        return {k: getattr(s, name) for k, s in stores.items() if name in s}

    @property
    def x_dict(self):
        return self._collect(self._nodes, "x")

    @property
    def n_id_dict(self):
        return self._collect(self._nodes, "n_id")

    @property
    def y_dict(self):
        return self._collect(self._nodes, "y")

    @property
    def edge_index_dict(self):
        return self._collect(self._edges, "edge_index")

    @property
    def num_sampled_nodes_dict(self):
        return self._collect(self._nodes, "num_sampled_nodes")

    @property
    def num_sampled_edges_dict(self):
        return self._collect(self._edges, "num_sampled_edges")

    def to(self, device, non_blocking=False):
        def move(stores):
            return {k: _Store(**{f: _move(v, device, non_blocking) for f, v in s.__dict__.items()})
                    for k, s in stores.items()}
        extra = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        return HeteroBatch(move(self._nodes), move(self._edges), **extra)

    def __repr__(self):
        parts = [f"{k!r}: {s!r}" for k, s in list(self._nodes.items()) + list(self._edges.items())]
        return "HeteroBatch(" + ", ".join(parts) + ")"


def tensors(batch):
    """Every tensor of a batch (PyG's or plain)."""
    if isinstance(batch, HeteroBatch):
        stores = list(batch._nodes.values()) + list(batch._edges.values())
    elif hasattr(batch, "stores"):  # PyG Data / HeteroData
        stores = [dict(s.items()) for s in batch.stores]
    else:
        stores = [batch.__dict__]
    for s in stores:
        values = s.values() if isinstance(s, dict) else s.__dict__.values()
        for v in values:
            if isinstance(v, torch.Tensor):
                yield v


def _edge_key(name, src, dst):
    """('src', 'rel', 'dst') from graphshard's 'src__rel__dst'."""
    prefix, suffix = src + "__", "__" + dst
    if name.startswith(prefix) and name.endswith(suffix) and len(name) > len(prefix + suffix):
        return (src, name[len(prefix):len(name) - len(suffix)], dst)
    return (src, name, dst)


def _link_fields(link, tensor, mode):
    """A link batch's supervision edges as LinkNeighborLoader lays them out: ("edge", fields of
    the edge type) for edge_label_index [2, M] and edge_label [M] (float, 1 positive, 0
    negative; mode "binary" or no negatives), or ("triplet", src fields, dst fields) for
    src_index and dst_pos_index [P] and dst_neg_index [P] or [P, amount] (mode "triplet").
    The servers put negative j of positive i at P * (1 + j) + i (data_types.h)."""
    src, dst = tensor(link["src"]), tensor(link["dst"])
    if mode != "triplet":
        return "edge", {"edge_label_index": torch.stack([src, dst]),
                        "edge_label": tensor(link["label"])}
    pos = int(link["num_pos"])
    amount = (int(src.shape[0]) - pos) // pos if pos else 0
    neg = dst[pos:].reshape(amount, pos).t().contiguous()
    return "triplet", {"src_index": src[:pos]}, {
        "dst_pos_index": dst[:pos], "dst_neg_index": neg.squeeze(-1) if amount == 1 else neg}


def build(raw, metadata, pyg, move=None, rows=None, link_mode=None):
    """A batch from graphshard._graphshard.Client.next()'s dict. pyg: make PyG objects. move:
    applied to every tensor (a copy to the device), else they stay over the batch's memory.
    rows: per node type, every feature row (Loader(feature_store="device")); a batch sent
    without rows (raw["features_omitted"]) takes its x from there, by n_id, on rows' device.
    link_mode: a link batch's layout (_link_fields), None, "binary" or "triplet"."""
    dtype = raw["feature_dtype"]
    if move is not None:
        tensor, features = (lambda a: move(_tensor(a))), (lambda a, d: move(_features(a, d)))
    else:
        tensor, features = _tensor, _features

    def x_of(i, n, n_id):
        if n["x"] is not None:
            return features(n["x"], dtype)
        if rows is None or rows[i] is None:
            raise RuntimeError("graphshard: a batch came without feature rows, but this loader "
                               "holds none (feature_store='device')")
        return rows[i].index_select(0, n_id.to(rows[i].device))
    extra = {"part": raw["part"], "epoch": raw["epoch"], "batch_index": raw["batch_index"]}
    link = _link_fields(raw["link"], tensor, link_mode) if "link" in raw else None
    if not metadata["heterogeneous"]:
        n, e = raw["nodes"][0], raw["edges"][0]
        n_id = tensor(n["ids"])
        fields = dict(
            x=x_of(0, n, n_id), y=tensor(n["y"]), edge_index=tensor(e["edge_index"]),
            n_id=n_id, batch_size=raw["batch_size"],
            num_sampled_nodes=list(n["num_sampled_nodes"]),
            num_sampled_edges=list(e["num_sampled_edges"]), **extra)
        if link is not None:  # LinkNeighborLoader's batches have no batch_size
            del fields["batch_size"]
            for f in link[1:]:
                fields.update(f)
        return _PygData(**fields) if pyg else Batch(**fields)

    types = metadata["node_types"]
    seed = raw["seed_block"]
    nodes = {}
    for i, n in enumerate(raw["nodes"]):
        f = {"n_id": tensor(n["ids"]), "num_sampled_nodes": list(n["num_sampled_nodes"])}
        if types[i]["feat_dim"] > 0:
            f["x"] = x_of(i, n, f["n_id"])
        if i == seed or types[i]["num_classes"] > 0:
            f["y"] = tensor(n["y"])
        if i == seed and link is None:
            f["batch_size"] = raw["batch_size"]
        nodes[n["type"]] = f
    edges = {}
    for e in raw["edges"]:
        src, dst = types[e["src_block"]]["name"], types[e["dst_block"]]["name"]
        edges[_edge_key(e["type"], src, dst)] = {
            "edge_index": tensor(e["edge_index"]),
            "num_sampled_edges": list(e["num_sampled_edges"])}
    if link is not None:
        ls, ld = types[raw["link"]["src_block"]]["name"], types[raw["link"]["dst_block"]]["name"]
        if link[0] == "edge":
            edges[_edge_key(raw["link"]["type"], ls, ld)].update(link[1])
        else:
            nodes[ls].update(link[1])
            nodes[ld].update(link[2])
    if pyg:
        data = _PygHeteroData()
        for k, f in list(nodes.items()) + list(edges.items()):
            for name, v in f.items():
                data[k][name] = v
        for name, v in extra.items():
            data[name] = v
        return data
    return HeteroBatch({k: _Store(**f) for k, f in nodes.items()},
                       {k: _Store(**f) for k, f in edges.items()}, **extra)


__all__ = ["Batch", "HeteroBatch", "build", "pyg_available"]
