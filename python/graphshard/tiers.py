"""The loader's tiered feature store (Loader(feature_store="device", device_cache_mib=M)), as
graphshard-trainer's: the rows its batches visit most on the device, every row in host memory
(page-locked on a GPU), each batch's x gathered from both. Hotness comes from a pre-sampling
pass over the loader's own first-epoch batches (the trainer's choice: docs/DESIGN.md, "The
tiered feature store"). x equals the all-rows store's bit for bit: the same rows, copied."""

import numpy as np


class TieredRows:
    """One node type's rows in two tiers, with the `index_select(0, ids)` and `device` that
    graphshard.data.build uses to gather x. Counts hits and bytes read from host memory."""

    def __init__(self, host_table, hot_ids, device):
        import torch
        self.device = device
        self.host = host_table.pin_memory() if device.type == "cuda" else host_table
        n = host_table.shape[0]
        hot = torch.as_tensor(hot_ids, dtype=torch.int64)
        slot = torch.full((n,), -1, dtype=torch.int32)
        slot[hot] = torch.arange(hot.numel(), dtype=torch.int32)
        self.slot = slot.to(device)
        self.cache = host_table.index_select(0, hot).to(device)
        self.row_bytes = host_table.element_size() * host_table.shape[1]
        self.device_rows, self.host_rows = 0, 0

    def index_select(self, dim, ids):
        import torch
        assert dim == 0
        ids = ids.to(self.device)
        slot = self.slot.index_select(0, ids)
        hit = slot >= 0
        out = torch.empty((ids.numel(), self.host.shape[1]), dtype=self.host.dtype,
                          device=self.device)
        hit_at = hit.nonzero().squeeze(1)
        out[hit_at] = self.cache.index_select(0, slot[hit_at].long())
        miss_at = (~hit).nonzero().squeeze(1)
        if miss_at.numel() > 0:
            miss_ids = ids[miss_at].cpu()
            # Gathered straight into page-locked memory on a GPU (one copy, then DMA); the
            # buffer comes from PyTorch's caching host allocator, which keeps it until the copy
            # that reads it is done.
            rows = torch.empty((miss_ids.numel(), self.host.shape[1]), dtype=self.host.dtype,
                               pin_memory=self.device.type == "cuda")
            torch.index_select(self.host, 0, miss_ids, out=rows)
            out[miss_at] = rows.to(self.device, non_blocking=True)
        self.device_rows += int(hit_at.numel())
        self.host_rows += int(miss_at.numel())
        return out


def visit_counts(raw_steps, node_types):
    """Per node type, how often the batches of `raw_steps` (graphshard._graphshard's raw dicts)
    visit each node (a node of a batch is one visit: one row gathered)."""
    counts = [np.zeros(t["num_nodes"], dtype=np.int64) for t in node_types]
    for raw in raw_steps:
        if not raw:
            continue
        for i, n in enumerate(raw["nodes"]):
            ids = np.asarray(n["ids"], dtype=np.int64)
            counts[i] += np.bincount(ids, minlength=counts[i].size)
    return counts


def hottest(counts, k):
    """The k most visited ids (ties: the lower id), ascending, as client::VisitCounts::Hottest."""
    k = max(0, min(int(k), counts.size))
    order = np.lexsort((np.arange(counts.size), -counts))[:k]
    return np.sort(order)


def split_budget(node_types, row_bytes, budget_bytes):
    """Rows per type the device tier holds: the budget shared in proportion to each type's table
    (as graphshard-trainer), less a 4-byte slot per node for the map; every row where it fits."""
    table = [t["num_nodes"] * b for t, b in zip(node_types, row_bytes)]
    total = max(sum(table), 1)
    out = []
    for t, b, size in zip(node_types, row_bytes, table):
        if b == 0:
            out.append(0)
            continue
        share = budget_bytes * size / total - 4 * t["num_nodes"]
        out.append(int(max(0, min(t["num_nodes"], share // b))))
    return out
