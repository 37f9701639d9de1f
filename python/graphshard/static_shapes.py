"""PadToStatic: a Loader transform that gives every homogeneous node batch the same tensor
shapes, so that a model compiled with torch.compile(mode="reduce-overhead") replays one CUDA
graph per step instead of launching each kernel from Python (docs/PYTHON.md, "Static shapes").

Each hop's nodes and edges are padded to a capacity that only grows: the first batch sets it
(its count plus `headroom`, rounded up to `align`), and a later batch above it raises it the same
way, which is then a new shape (torch.compile traces and captures again; `grew` counts these).
Padding never changes what the real nodes compute:
  - hop h's nodes keep their order at the start of hop h's segment; the segment ends with at
    least one padding node. n_id and x of a padding node repeat the batch's first node; y is
    -100, cross_entropy's ignore_index.
  - hop h's edges keep their order at the start of hop h's edge segment; padding edges run
    from hop h's last padding node into hop h - 1's last padding node. No edge touches a real
    node, so a real node's aggregation (sum, mean, max, attention) is the unpadded batch's.
  - num_sampled_nodes / num_sampled_edges are the capacities: PyG's trim_to_layer and the
    bipartite per-layer form cut at hop boundaries exactly as before.
  - batch_size is the seeds' capacity (the output rows a model returns for them, padding
    included: out[:batch.batch_size] keeps its shape) and num_seeds the real seeds; the loss
    over y[:batch.batch_size] with ignore_index -100 (cross_entropy's default) is the unpadded
    batch's mean. Count accuracy over num_seeds.
Homogeneous node batches only (Loader, not LinkLoader, not heterogeneous graphs): others raise
ValueError naming what they are."""
import math
import threading

import torch

IGNORE_LABEL = -100  # torch.nn.functional.cross_entropy's default ignore_index


def _round_up(n, align):
    return int(math.ceil(n / align) * align)


class PadToStatic:
    """transform= for graphshard.Loader (see the module's docstring). headroom: the fraction a
    capacity is set above the count that set it (fewer shapes against more padding); align:
    capacities are multiples of it."""

    def __init__(self, headroom=0.05, align=128):
        if not (isinstance(headroom, (int, float)) and 0 <= headroom <= 10):
            raise ValueError(f"PadToStatic(headroom={headroom!r}): expected a number in [0, 10]")
        if not (isinstance(align, int) and align >= 1):
            raise ValueError(f"PadToStatic(align={align!r}): expected an integer >= 1")
        self.headroom = float(headroom)
        self.align = align
        self.node_caps = None  # per hop, seeds first
        self.edge_caps = None  # per hop, hop 1 first
        self.grew = 0  # batches that raised a capacity after the first
        self._lock = threading.Lock()  # one instance may serve several loaders' threads

    def _grow(self, caps, counts, spare):
        """caps raised where a count (plus `spare` padding slots) does not fit; True if any."""
        changed = False
        for h, n in enumerate(counts):
            need = n + spare
            if need > caps[h]:
                caps[h] = _round_up(math.ceil(need * (1 + self.headroom)), self.align)
                changed = True
        return changed

    def _check(self, batch):
        if not hasattr(batch, "edge_index") or not hasattr(batch, "num_sampled_nodes"):
            raise ValueError(f"PadToStatic: {type(batch).__name__} is not a homogeneous node "
                             f"batch (heterogeneous batches are not padded)")
        for link in ("edge_label_index", "src_index"):
            if hasattr(batch, link) and getattr(batch, link) is not None:
                raise ValueError(f"PadToStatic: a link batch ({link}); only node batches "
                                 f"(graphshard.Loader) are padded")
        ns, es = list(batch.num_sampled_nodes), list(batch.num_sampled_edges)
        if len(es) + 1 != len(ns):
            raise ValueError(f"PadToStatic: {len(ns)} node hops and {len(es)} edge hops")
        return [int(n) for n in ns], [int(e) for e in es]

    def __call__(self, batch):
        ns, es = self._check(batch)
        with self._lock:
            if self.node_caps is None:
                self.node_caps, self.edge_caps = [0] * len(ns), [0] * len(es)
                self._grow(self.node_caps, ns, 1)
                self._grow(self.edge_caps, es, 0)
            elif len(ns) != len(self.node_caps):
                raise ValueError(f"PadToStatic: a batch of {len(ns)} node hops after batches "
                                 f"of {len(self.node_caps)}")
            else:
                grew = self._grow(self.node_caps, ns, 1)
                grew = self._grow(self.edge_caps, es, 0) or grew
                self.grew += int(grew)
            nc, ec = list(self.node_caps), list(self.edge_caps)  # this batch's shapes
        edge_index = batch.edge_index
        device = edge_index.device
        old_start = [0] + list(_cumsum(ns))
        new_start = [0] + list(_cumsum(nc))

        # gather[new position] = old position (padding: 0); new_of_old[old] = new position.
        gather = torch.zeros(new_start[-1], dtype=torch.long, device=device)
        new_of_old = torch.empty(old_start[-1], dtype=torch.long, device=device)
        for h, n in enumerate(ns):
            gather[new_start[h]:new_start[h] + n] = torch.arange(
                old_start[h], old_start[h] + n, device=device)
            new_of_old[old_start[h]:old_start[h] + n] = torch.arange(
                new_start[h], new_start[h] + n, device=device)

        edges = torch.empty((2, sum(ec)), dtype=edge_index.dtype, device=device)
        old_e, new_e = 0, 0
        for h, (e, cap) in enumerate(zip(es, ec), start=1):
            seg = edge_index[:, old_e:old_e + e]
            edges[:, new_e:new_e + e] = new_of_old[seg]
            edges[0, new_e + e:new_e + cap] = new_start[h + 1] - 1  # hop h's last padding node
            edges[1, new_e + e:new_e + cap] = new_start[h] - 1  # hop h - 1's last padding node
            old_e, new_e = old_e + e, new_e + cap

        batch.edge_index = edges
        batch.n_id = batch.n_id.index_select(0, gather)
        x = getattr(batch, "x", None)
        if x is not None:
            batch.x = x.index_select(0, gather)
        y = getattr(batch, "y", None)
        if y is not None:
            padded = torch.full((new_start[-1],) + tuple(y.shape[1:]), IGNORE_LABEL,
                                dtype=y.dtype, device=y.device)
            for h, n in enumerate(ns):
                padded[new_start[h]:new_start[h] + n] = y[old_start[h]:old_start[h] + n]
            batch.y = padded
        batch.num_seeds = int(getattr(batch, "batch_size", ns[0]))
        batch.batch_size = nc[0]
        batch.num_sampled_nodes = list(nc)
        batch.num_sampled_edges = list(ec)
        return batch

    def __repr__(self):
        return (f"PadToStatic(headroom={self.headroom}, align={self.align}, "
                f"node_caps={self.node_caps}, edge_caps={self.edge_caps}, grew={self.grew})")


def _cumsum(values):
    total = 0
    for v in values:
        total += v
        yield total


__all__ = ["PadToStatic", "IGNORE_LABEL"]
