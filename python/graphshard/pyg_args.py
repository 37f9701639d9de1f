"""PyG's NeighborLoader and LinkNeighborLoader arguments mapped onto graphshard's servers: which
are taken, which are refused (ValueError naming the argument, never silently ignored), and the
parsing of input_nodes, edge_label_index and neg_sampling into what the servers do.
No server calls here: everything is checked against the servers' metadata (Client.metadata())."""
import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover - the loader needs torch; host_id etc. do not
    torch = None

# PyG arguments graphshard does not do: name -> (the value that asks for nothing, why another is
# refused). Passing that value (PyG's default) is accepted, as it changes nothing in PyG either.
_REFUSED = {
    "data": (None, "the graph is on the servers: give registry=DIR or servers=[...]"),
    "input_time": (None, "temporal seed times are not supported by graphshard's Python loaders"),
    "edge_label_time": (None, "temporal seed times are not supported by graphshard's Python "
                              "loaders"),
    "time_attr": (None, "temporal sampling is not supported by graphshard's Python loaders"),
    "temporal_strategy": ("uniform", "temporal sampling is not supported by graphshard's Python "
                                     "loaders"),
    "weight_attr": (None, "the servers sample neighbors uniformly"),
    "subgraph_type": ("directional", "the servers sample directional subgraphs"),
    "disjoint": (False, "the servers sample one shared subgraph per batch"),
    "directed": (True, "the servers sample directional subgraphs"),
    "transform_sampler_output": (None, "the servers build the batches"),
    "is_sorted": (False, "the servers hold the graph"),
    "filter_per_worker": (None, "the servers build the batches, not DataLoader workers"),
    "neighbor_sampler": (None, "the servers sample"),
    "num_workers": (0, "the servers sample; read ahead with device=... and prefetch=N"),
    "collate_fn": (None, "the servers build the batches"),
    "pin_memory": (False, "device='cuda' copies batches straight out of page-locked shared "
                          "memory"),
    "pin_memory_device": ("", "use device='cuda'"),
    "drop_last": (False, "every seed is in a batch (equal_steps= evens out the ranks' steps)"),
    "timeout": (0, "use rpc_timeout_s="),
    "worker_init_fn": (None, "the servers sample; there are no DataLoader workers"),
    "multiprocessing_context": (None, "the servers sample; there are no DataLoader workers"),
    "persistent_workers": (False, "the servers sample; there are no DataLoader workers"),
    "prefetch_factor": (None, "use prefetch= (with device=)"),
    "generator": (None, "use seed=: batch b of epoch e is a function of (seed, e, b)"),
    "sampler": (None, "the servers choose each batch's seeds (shuffle=, seed=)"),
    "batch_sampler": (None, "the servers choose each batch's seeds (batch_size=, shuffle=)"),
}


def _is_default(value, default):
    if default is None:
        return value is None
    return type(value) is type(default) and value == default


def refuse_unsupported(kwargs, loader):
    """ValueError naming the first PyG argument in `kwargs` whose value asks for something the
    servers do not do; TypeError for a name that is no argument of PyG's loaders either."""
    for name, value in kwargs.items():
        if name not in _REFUSED:
            raise TypeError(f"{loader}() got an unexpected keyword argument {name!r}")
        default, why = _REFUSED[name]
        if not _is_default(value, default):
            raise ValueError(f"{loader}: {name}={_show(value)} is not supported ({why})")


def _show(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _array(value, name):
    """A numpy view of a tensor, array or sequence."""
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: {type(value).__name__} is not an array of node ids or a "
                         f"mask ({e})") from None


def input_node_seeds(input_nodes, metadata):
    """NeighborLoader's input_nodes as (node type, int64 ids): ids (tensor, array or list), a
    boolean mask over the type's nodes, ("type", ids or mask), ("type", None) or "type" (every
    node of the type). Ids are graphshard's global ids of that type (a batch's n_id). A bare
    ids/mask names the target type, and only on a homogeneous graph (as PyG asks a type of
    HeteroData). ValueError naming input_nodes for an unknown type, a mask of the wrong length,
    ids out of range or repeated (the servers seed distinct nodes), or no node at all."""
    types = {t["name"]: t for t in metadata["node_types"]}
    if isinstance(input_nodes, str):
        node_type, nodes = input_nodes, None
    elif isinstance(input_nodes, (tuple, list)) and len(input_nodes) == 2 and \
            isinstance(input_nodes[0], str):
        node_type, nodes = input_nodes
    else:
        if metadata["heterogeneous"]:
            raise ValueError(f"input_nodes: the graph is heterogeneous (node types "
                             f"{sorted(types)}): give ('node_type', ids), ('node_type', None) "
                             f"or 'node_type'")
        node_type, nodes = metadata["target_type"], input_nodes
    if node_type not in types:
        raise ValueError(f"input_nodes: the graph has no node type {node_type!r} (it has "
                         f"{sorted(types)})")
    n = int(types[node_type]["num_nodes"])
    if nodes is None:
        ids = np.arange(n, dtype=np.int64)
    else:
        a = _array(nodes, "input_nodes")
        if a.ndim != 1:
            raise ValueError(f"input_nodes: expected 1-D node ids or a mask, got shape "
                             f"{tuple(a.shape)}")
        if a.size == 0:
            raise ValueError(f"input_nodes: no {node_type!r} node selected")
        if a.dtype == np.bool_:
            if a.shape[0] != n:
                raise ValueError(f"input_nodes: a mask of {a.shape[0]} entries for the {n} "
                                 f"nodes of {node_type!r}")
            ids = np.flatnonzero(a).astype(np.int64)
        elif np.issubdtype(a.dtype, np.integer):
            ids = a.astype(np.int64)
        else:
            raise ValueError(f"input_nodes: dtype {a.dtype}: expected integer node ids or a "
                             f"boolean mask")
    if ids.size == 0:
        raise ValueError(f"input_nodes: no {node_type!r} node selected")
    if ids.min() < 0 or ids.max() >= n:
        bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
        raise ValueError(f"input_nodes: id {bad} is outside {node_type!r}'s ids 0..{n - 1} "
                         f"(graphshard's global ids, as a batch's n_id)")
    unique = np.unique(ids)
    if unique.size != ids.size:
        seen = np.sort(ids)
        dup = int(seen[np.flatnonzero(seen[1:] == seen[:-1])[0]])
        raise ValueError(f"input_nodes: id {dup} is given more than once (the servers seed "
                         f"distinct nodes)")
    return node_type, np.ascontiguousarray(ids)


def edge_key(name, src, dst):
    """('src', 'rel', 'dst') from graphshard's 'src__rel__dst'."""
    prefix, suffix = src + "__", "__" + dst
    if name.startswith(prefix) and name.endswith(suffix) and len(name) > len(prefix + suffix):
        return (src, name[len(prefix):len(name) - len(suffix)], dst)
    return (src, name, dst)


def _edge_type_name(value, metadata):
    """graphshard's name of an edge type given as ('src', 'rel', 'dst') or 'src__rel__dst'."""
    for e in metadata["edge_types"]:
        if value == e["name"] or (isinstance(value, (tuple, list)) and
                                  tuple(value) == edge_key(e["name"], e["src"], e["dst"])):
            return e["name"]
    return None


def _names_type(value):
    return isinstance(value, str) or (isinstance(value, (tuple, list)) and len(value) == 3 and
                                      all(isinstance(v, str) for v in value))


def link_edge_type(edge_label_index, metadata):
    """LinkNeighborLoader's edge_label_index as the edge type whose edge split the servers draw
    link batches from: an edge type ('src', 'rel', 'dst') or 'src__rel__dst', (edge type, None),
    or None on a graph with one edge type. Explicit edges (a [2, N] tensor, or (type, tensor))
    raise ValueError naming edge_label_index: the servers hold the supervision edges (the
    partition's edge split) and cannot take others."""
    names = [e["name"] for e in metadata["edge_types"]]
    keys = [edge_key(e["name"], e["src"], e["dst"]) for e in metadata["edge_types"]]
    value = edge_label_index
    if isinstance(value, (tuple, list)) and len(value) == 2 and _names_type(value[0]):
        value, edges = value
        if edges is not None:
            raise ValueError(_EXPLICIT_EDGES)
    if value is None:
        if len(names) != 1:
            raise ValueError(f"edge_label_index: the graph has {len(names)} edge types; name one "
                             f"of {keys}")
        return names[0]
    if _names_type(value):
        name = _edge_type_name(value, metadata)
        if name is None:
            raise ValueError(f"edge_label_index: the graph has no edge type {value!r} (it has "
                             f"{keys})")
        return name
    raise ValueError(_EXPLICIT_EDGES)


_EXPLICIT_EDGES = (
    "edge_label_index: explicit edges are not supported: the servers draw link batches from the "
    "partition's edge split (graphshard-partition --edge-split); name the edge type, e.g. "
    "edge_label_index=('user', 'rates', 'movie'), and the split with split='train'|'val'|'test'")


def negatives(neg_sampling, neg_sampling_ratio):
    """(mode, amount) from LinkNeighborLoader's neg_sampling ("binary", "triplet", a dict or a
    NegativeSampling with mode and amount, or None) and its older neg_sampling_ratio (binary with
    that amount): mode None, "binary" or "triplet", amount the negatives per positive. The
    servers draw a whole number of negatives per positive, uniformly or by degree (the loader's
    `negatives=`): another amount or a NegativeSampling weight raise ValueError naming the
    argument."""
    if neg_sampling is not None and neg_sampling_ratio is not None:
        raise ValueError("neg_sampling_ratio: give neg_sampling or neg_sampling_ratio, not both")
    if neg_sampling is None:
        if neg_sampling_ratio is None or neg_sampling_ratio == 0:
            return None, 0
        return "binary", _amount(neg_sampling_ratio, "neg_sampling_ratio")
    if isinstance(neg_sampling, str):
        mode, amount, weight = neg_sampling, 1, None
    elif isinstance(neg_sampling, dict):
        unknown = set(neg_sampling) - {"mode", "amount", "weight"}
        if unknown or "mode" not in neg_sampling:
            raise ValueError(f"neg_sampling: expected a dict with 'mode' and optionally 'amount', "
                             f"got keys {sorted(neg_sampling)}")
        mode = neg_sampling["mode"]
        amount = neg_sampling.get("amount", 1)
        weight = neg_sampling.get("weight")
    elif hasattr(neg_sampling, "mode") and hasattr(neg_sampling, "amount"):
        mode, amount = neg_sampling.mode, neg_sampling.amount
        weight = getattr(neg_sampling, "weight", None)
    else:
        raise ValueError(f"neg_sampling={_show(neg_sampling)}: expected 'binary', 'triplet', a "
                         f"dict or a NegativeSampling")
    mode = getattr(mode, "value", mode)  # PyG's NegativeSamplingMode enum
    if mode not in ("binary", "triplet"):
        raise ValueError(f"neg_sampling: mode {mode!r}: expected 'binary' or 'triplet'")
    if weight is not None:
        raise ValueError("neg_sampling: a weight is not supported (the servers draw negative "
                         "destinations uniformly, or by degree with negatives='degree')")
    return mode, _amount(amount, "neg_sampling")


def _amount(value, name):
    try:
        amount = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: amount {value!r} is not a number") from None
    if amount < 1 or amount != int(amount):
        raise ValueError(f"{name}: amount {value!r}: the servers draw a whole number >= 1 of "
                         f"negatives per positive edge")
    return int(amount)


__all__ = ["edge_key", "input_node_seeds", "link_edge_type", "negatives", "refuse_unsupported"]
