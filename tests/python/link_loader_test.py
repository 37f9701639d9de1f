#!/usr/bin/env python3
"""graphshard.LinkLoader as PyG's LinkNeighborLoader, over 2 real servers' link batches (Cora
with an 85/5/10 edge split, and IMDB's director -> movie edges): edge_label_index [2, M] and
edge_label (1 for the P positives first, then 0 for the negatives, which share their positive's
source) for neg_sampling "binary" / neg_sampling_ratio k (M = P * (1 + k)), none (all 1), and
"triplet" (src_index, dst_pos_index, dst_neg_index [P, k]); every split edge is a positive once
per epoch, and no positive edge is in the batch's message-passing edges (either direction).
Explicit edges, edge_label, fractional ratios, weights and unsupported PyG arguments raise
ValueError naming the argument.
Usage: link_loader_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python)."""
import os
import sys

import torch

import gs_testlib as t
import graphshard


def partition(env, name, extra):
    out = os.path.join(env.work, name)
    t.run([os.path.join(env.bin, "graphshard-partition"), "partition", "--parts", "2",
           "--method", "random", "--seed", "1", "--out", out, *extra], 120)
    return out


def check_batch(store, nodes_src, nodes_dst, edges, neg, what):
    """One batch's supervision edges (binary layout): labels, shapes, shared sources, no leak.
    Returns the positives as global (src, dst) ids."""
    eli, label = store.edge_label_index, store.edge_label
    m = eli.shape[1]
    if eli.dim() != 2 or eli.shape[0] != 2 or eli.dtype != torch.int64:
        t.fail(f"{what}: edge_label_index {tuple(eli.shape)} {eli.dtype}")
    if label.dtype != torch.float32 or label.shape != (m,) or m % (1 + neg):
        t.fail(f"{what}: edge_label {tuple(label.shape)} {label.dtype} for {m} edges")
    p = m // (1 + neg)
    if not torch.equal(label, torch.cat([torch.ones(p), torch.zeros(m - p)])):
        t.fail(f"{what}: edge_label is not {p} ones then {m - p} zeros")
    if bool((eli[0] >= nodes_src.numel()).any()) or bool((eli[1] >= nodes_dst.numel()).any()) \
            or bool((eli < 0).any()):
        t.fail(f"{what}: edge_label_index outside the batch's nodes")
    for j in range(neg):  # negative j of positive i: same source
        if not torch.equal(eli[0, p * (1 + j):p * (2 + j)], eli[0, :p]):
            t.fail(f"{what}: negative {j} does not share its positive's source")
    mp = set(zip((nodes_src[edges[0]]).tolist(), (nodes_dst[edges[1]]).tolist()))
    pos = list(zip(nodes_src[eli[0, :p]].tolist(), nodes_dst[eli[1, :p]].tolist()))
    if any((s, d) in mp or (d, s) in mp for s, d in pos):
        t.fail(f"{what}: a positive supervision edge is also a message-passing edge")
    return pos


def check_cora(env):
    part = partition(env, "cora_link", ["--input", os.path.join(env.src, "tests/data/cora"),
                                        "--undirected", "--edge-split", "0.85,0.05,0.10"])
    registry, _ = env.start_servers(part, registry=os.path.join(env.work, "reg_cora"))
    for neg_args, neg in [(dict(neg_sampling="binary"), 1), (dict(neg_sampling_ratio=2.0), 2),
                          (dict(neg_sampling=dict(mode="binary", amount=3)), 3), ({}, 0)]:
        loader = graphshard.LinkLoader(registry=registry, num_neighbors=[5, 5], batch_size=128,
                                       output="plain", **neg_args)
        total = sum(ids.numel() for ids in loader.seed_ids().values())
        positives = []
        for b in loader:
            if "batch_size" in b:
                t.fail("a link batch with batch_size (LinkNeighborLoader's have none)")
            positives += check_batch(b, b.n_id, b.n_id, b.edge_index, neg, f"cora {neg_args}")
        if len(positives) != total or len(set(positives)) != total:
            t.fail(f"cora {neg_args}: {len(positives)} positives ({len(set(positives))} "
                   f"distinct) in an epoch of {total} split edges")
        t.note(f"cora {neg_args}: {len(loader)} batches, {total} positives once each")
    # Validation edges: split="val", fewer edges, no shuffle by default.
    val = graphshard.LinkLoader(registry=registry, split="val", neg_sampling="binary",
                                batch_size=1000, output="plain")
    train_edges = sum(e["split_sizes"].get("train", 0) for e in val.metadata["edge_types"])
    val_total = sum(ids.numel() for ids in val.seed_ids().values())
    if val.shuffle or not 0 < val_total < train_edges:
        t.fail(f"val split: shuffle {val.shuffle}, {val_total} edges")
    # Triplet: P sources, P positive destinations, [P, 2] negatives, as PyG lays them out.
    for b in graphshard.LinkLoader(registry=registry, batch_size=100, output="plain",
                                   neg_sampling=dict(mode="triplet", amount=2)):
        p = b.src_index.numel()
        if b.dst_pos_index.shape != (p,) or b.dst_neg_index.shape != (p, 2) or \
                "edge_label_index" in b:
            t.fail(f"triplet: src {p}, dst_pos {tuple(b.dst_pos_index.shape)}, dst_neg "
                   f"{tuple(b.dst_neg_index.shape)}")
        if int(b.dst_neg_index.max()) >= b.n_id.numel():
            t.fail("triplet: dst_neg_index outside the batch's nodes")
    t.note("triplet layout ok")
    # PadToStatic pads node batches only: a link batch's supervision edges would dangle.
    padded = graphshard.LinkLoader(registry=registry, batch_size=100, output="plain",
                                   neg_sampling="binary", transform=graphshard.PadToStatic())
    t.expect_error(ValueError, "link batch", lambda: next(iter(padded)))

    for bad, mention in [
            (dict(edge_label_index=torch.tensor([[0, 1], [1, 2]])), "edge_label_index"),
            (dict(edge_label_index=("paper", "cites", "paper")), "edge_label_index"),
            (dict(edge_label=torch.ones(2)), "edge_label"),
            (dict(neg_sampling_ratio=0.5), "neg_sampling_ratio"),
            (dict(neg_sampling="binary", neg_sampling_ratio=1.0), "neg_sampling_ratio"),
            (dict(neg_sampling=dict(mode="binary", amount=1, weight=torch.ones(3))),
             "neg_sampling"),
            (dict(neg_sampling="hard"), "neg_sampling"),
            (dict(negatives="popular"), "negatives"),
            (dict(transform="pad"), "transform"),
            (dict(edge_label_time=torch.zeros(2)), "edge_label_time"),
            (dict(num_workers=2), "num_workers")]:
        try:
            graphshard.LinkLoader(registry=registry, **bad)
        except ValueError as e:
            if mention not in str(e):
                t.fail(f"{bad}: {e!r} does not name {mention}")
        else:
            t.fail(f"{bad} accepted")
    names = graphshard.LinkLoader(registry=registry, output="plain").metadata["edge_types"]
    e = names[0]
    rel = e["name"][len(e["src"]) + 2:len(e["name"]) - len(e["dst"]) - 2]
    graphshard.LinkLoader(registry=registry, edge_label_index=(e["src"], rel, e["dst"]))
    graphshard.LinkLoader(registry=registry, edge_label_index=((e["src"], rel, e["dst"]), None))
    t.note("bad LinkLoader arguments raise ValueError naming them; edge types by name accepted")


def check_imdb(env):
    edge = "director__director_to_movie__movie"
    part = partition(env, "imdb_link", [
        "--input", os.path.join(env.src, "tests/data/imdb"), "--edge-split", "0.8,0.1,0.1",
        "--target-edge-type", edge, "--reverse-edge-type", "movie__movie_to_director__director"])
    registry, _ = env.start_servers(part, registry=os.path.join(env.work, "reg_imdb"))
    key = ("director", "director_to_movie", "movie")
    loader = graphshard.LinkLoader(registry=registry, edge_label_index=key, num_neighbors=[4, 3],
                                   neg_sampling_ratio=1, batch_size=64, output="plain")
    if loader.edge_type != key:
        t.fail(f"edge_type {loader.edge_type}")
    total = sum(ids.numel() for ids in loader.seed_ids().values())
    positives = []
    for b in loader:
        store = b[key]
        positives += check_batch(store, b["director"].n_id, b["movie"].n_id, store.edge_index, 1,
                                 "imdb")
    if len(set(positives)) != total or len(positives) != total:
        t.fail(f"imdb: {len(positives)} positives for {total} split edges")
    try:
        graphshard.LinkLoader(registry=registry)
    except ValueError as e:
        if "edge_label_index" not in str(e):
            t.fail(f"several edge types, none named: {e!r}")
    else:
        t.fail("a heterogeneous LinkLoader without edge_label_index accepted")
    t.note(f"imdb: {len(loader)} heterogeneous link batches, {total} positives once each")


def main():
    env = t.Env()
    try:
        check_cora(env)
        check_imdb(env)
    finally:
        env.cleanup()
    t.note("ok")


if __name__ == "__main__":
    sys.exit(main())
