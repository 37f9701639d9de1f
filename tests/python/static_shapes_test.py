#!/usr/bin/env python3
"""graphshard.PadToStatic (Loader transform=) on Cora served by 2 real servers: every padded
batch of an epoch has the shapes its capacities say (distinct shapes = 1 + times they grew);
a mean-aggregation GraphSAGE computes the same seed outputs and the same loss (cross_entropy,
ignore_index -100) on the padded batch as on the unpadded one, untrimmed and trimmed per hop
as PyG's trim_to_layer; no edge joins a real node to padding; the transform runs in the
read-ahead builder thread with device="cpu", where a raising transform's error reaches the
loop; heterogeneous and link batches and a non-callable transform raise ValueError naming them.
Usage: static_shapes_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python)."""
import os

import torch
import torch.nn.functional as F

import graphshard
import gs_testlib as t
from graphshard.data import Batch

FANOUTS = [10, 5, 3]


class Sage(torch.nn.Module):
    """Mean-aggregation GraphSAGE (PyG's SAGEConv); trim: layer l reads only the nodes and edges
    within L - l hops, from num_sampled_nodes / num_sampled_edges (PyG's trim_to_layer)."""

    def __init__(self, dims):
        super().__init__()
        self.lin_l = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.lin_r = torch.nn.ModuleList(
            torch.nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:]))

    def forward(self, x, edge_index, nodes=None, edges=None):
        layers = len(self.lin_l)
        for i, (l, r) in enumerate(zip(self.lin_l, self.lin_r)):
            if nodes is not None:
                x = x[:sum(nodes[:len(nodes) - i])]
                edge_index = edge_index[:, :sum(edges[:len(edges) - i])]
            src, dst = edge_index[0], edge_index[1]
            deg = torch.bincount(dst, minlength=x.shape[0]).clamp(min=1).unsqueeze(1)
            mean = torch.zeros_like(x).index_add_(0, dst, x[src]) / deg
            x = l(mean) + r(x)
            if i + 1 < layers:
                x = F.relu(x)
        return x


def check_equal(model, plain, padded, trim):
    nodes = (plain.num_sampled_nodes, padded.num_sampled_nodes) if trim else (None, None)
    edges = (plain.num_sampled_edges, padded.num_sampled_edges) if trim else (None, None)
    a = model(plain.x, plain.edge_index, nodes[0], edges[0])[:plain.batch_size]
    b = model(padded.x, padded.edge_index, nodes[1], edges[1])[:padded.batch_size]
    if b.shape[0] != padded.num_sampled_nodes[0]:
        t.fail(f"padded output rows {b.shape[0]} != seed capacity")
    if not torch.allclose(a, b[:plain.batch_size], atol=1e-5, rtol=1e-4):
        t.fail(f"seed outputs differ (trim={trim}): max |d| "
               f"{(a - b[:plain.batch_size]).abs().max().item()}")
    la = F.cross_entropy(a, plain.y[:plain.batch_size])
    lb = F.cross_entropy(b, padded.y[:padded.batch_size])
    if not torch.allclose(la, lb, atol=1e-6, rtol=1e-5):
        t.fail(f"loss {lb.item()} over the padded batch != {la.item()} (trim={trim})")


def check_layout(plain, padded, pad):
    ns, es = plain.num_sampled_nodes, plain.num_sampled_edges
    nc, ec = padded.num_sampled_nodes, padded.num_sampled_edges
    if list(nc) != pad.node_caps or list(ec) != pad.edge_caps:
        t.fail(f"batch hops {nc}/{ec} are not the capacities {pad.node_caps}/{pad.edge_caps}")
    if padded.num_seeds != plain.batch_size or padded.batch_size != nc[0]:
        t.fail(f"num_seeds {padded.num_seeds} / batch_size {padded.batch_size}")
    if any(c < n + 1 for c, n in zip(nc, ns)) or any(c < e for c, e in zip(ec, es)):
        t.fail(f"capacities {nc}/{ec} below the counts {ns}/{es}")
    if padded.x.shape[0] != sum(nc) or padded.edge_index.shape[1] != sum(ec):
        t.fail(f"x {tuple(padded.x.shape)} / edge_index {tuple(padded.edge_index.shape)}")
    real = torch.zeros(sum(nc), dtype=torch.bool)
    start_old = start_new = 0
    for n, c in zip(ns, nc):
        real[start_new:start_new + n] = True
        if not torch.equal(padded.n_id[start_new:start_new + n],
                           plain.n_id[start_old:start_old + n]):
            t.fail("a hop's real nodes moved or changed")
        if not (padded.y[start_new + n:start_new + c] == -100).all():
            t.fail("a padding node's label is not -100")
        start_old, start_new = start_old + n, start_new + c
    src, dst = padded.edge_index
    mixed = real[src] != real[dst]
    if mixed.any():
        t.fail(f"{int(mixed.sum())} edges join a real node and a padding node")
    if int(real[dst].sum()) != plain.edge_index.shape[1]:
        t.fail("the padded batch has a different number of edges into real nodes")


def check_consistent(b):
    """A padded batch agrees with its own hops: sizes, and no edge between a real node and
    padding (labels -100 mark the padding seeds; other padding is found by position)."""
    nc, ec = b.num_sampled_nodes, b.num_sampled_edges
    if b.x.shape[0] != sum(nc) or b.edge_index.shape[1] != sum(ec) or b.batch_size != nc[0]:
        t.fail(f"inconsistent padded batch: x {tuple(b.x.shape)}, edges "
               f"{tuple(b.edge_index.shape)}, hops {nc} / {ec}")
    if int(b.edge_index.max()) >= sum(nc) or (b.y[b.num_seeds:nc[0]] != -100).any():
        t.fail("a padded batch's edges or seed labels are out of place")


def main():
    env = t.Env()
    try:
        registry, _ = env.start_servers(env.partition_cora())
        torch.manual_seed(1)
        common = dict(registry=registry, split="train", num_neighbors=FANOUTS, batch_size=24,
                      shuffle=True, seed=3, output="plain")
        pad = graphshard.PadToStatic(headroom=0.02, align=16)
        plain = graphshard.Loader(**common)
        padded = graphshard.Loader(**common, transform=pad)
        md = plain.metadata
        model = Sage([md["feat_dim"], 32, 32, md["num_classes"]]).eval()
        shapes = set()
        steps = 0
        with torch.no_grad():
            for a, b in zip(plain, padded):
                check_layout(a, b, pad)
                check_equal(model, a, b, trim=False)
                check_equal(model, a, b, trim=True)
                shapes.add((tuple(b.x.shape), tuple(b.edge_index.shape), tuple(b.y.shape)))
                steps += 1
        if steps != len(plain) or steps < 3:
            t.fail(f"{steps} batches compared, the loader has {len(plain)}")
        if len(shapes) != pad.grew + 1:
            t.fail(f"{len(shapes)} distinct shapes but the capacities grew {pad.grew} times")
        t.note(f"{steps} batches: padded = unpadded outputs and loss; {len(shapes)} shape(s); "
               f"{pad!r}")

        # With a device the transform runs in the read-ahead builder thread, before the batch
        # is yielded.
        ahead = graphshard.PadToStatic()
        seen = 0
        for b in graphshard.Loader(**common, transform=ahead, device="cpu", prefetch=2):
            # The capacities may have grown since (the thread reads ahead): the batch's own.
            if not hasattr(b, "num_seeds") or b.x.shape[0] != sum(b.num_sampled_nodes) or \
                    any(n > c for n, c in zip(b.num_sampled_nodes, ahead.node_caps)):
                t.fail("a read-ahead batch is not padded")
            seen += 1
        if seen != len(plain):
            t.fail(f"read-ahead loader gave {seen} batches")

        # One instance shared by two read-ahead loaders (headroom 0: it grows often): every
        # batch is padded consistently to the capacities of its own moment.
        shared = graphshard.PadToStatic(headroom=0, align=1)
        both = [graphshard.Loader(**dict(common, seed=s), transform=shared, device="cpu")
                for s in (3, 4)]
        for pair in zip(*both):
            for b in pair:
                check_consistent(b)
        t.note(f"shared by two read-ahead loaders: consistent; {shared!r}")
        # A transform that raises in the read-ahead builder thread: the error reaches the loop
        # (no hang), and the servers go on serving a new loader.
        def broken(batch):
            raise RuntimeError("transform broke")
        t.expect_error(RuntimeError, "transform broke",
                       lambda: list(graphshard.Loader(**common, transform=broken, device="cpu")))
        if sum(1 for _ in graphshard.Loader(**common, device="cpu")) != len(plain):
            t.fail("after a failed transform the servers did not serve a whole epoch")
        # A batch with another number of hops than the ones before it.
        two_hops = Batch(x=torch.zeros(4, 3), y=torch.zeros(4, dtype=torch.long),
                         n_id=torch.arange(4), edge_index=torch.tensor([[1, 2, 3], [0, 0, 1]]),
                         batch_size=1, num_sampled_nodes=[1, 2, 1], num_sampled_edges=[2, 1])
        t.expect_error(ValueError, "node hops", lambda: pad(two_hops))
        t.expect_error(ValueError, "transform",
                       lambda: graphshard.Loader(**common, transform="pad"))
        t.expect_error(ValueError, "headroom", lambda: graphshard.PadToStatic(headroom=-1))
        t.expect_error(ValueError, "align", lambda: graphshard.PadToStatic(align=0))
        check_refused(env)
        t.note("ok")
    finally:
        env.cleanup()


def check_refused(env):
    """Heterogeneous and link batches are refused with a ValueError naming what they are."""
    hetero = env.partition_imdb()
    reg, _ = env.start_servers(hetero, registry=os.path.join(env.work, "reg_imdb"))
    loader = graphshard.Loader(registry=reg, split="train", num_neighbors=[4, 3], batch_size=64,
                               output="plain", transform=graphshard.PadToStatic())
    t.expect_error(ValueError, "heterogeneous", lambda: next(iter(loader)))

if __name__ == "__main__":
    main()
