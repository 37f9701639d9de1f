#!/usr/bin/env python3
"""graphshard.Loader(input_nodes=...) as PyG's NeighborLoader takes it, against 2 real servers:
the batches' seeds are exactly the nodes asked for (each once per epoch), given as ids (tensor,
array, list), a boolean mask, ("type", ids), ("type", None) or "type"; without shuffle in the
order given on each part; a node type other than the target one seeds heterogeneous batches
(IMDB's directors) with batch_size and y on that type. Bad input_nodes and PyG arguments the
servers do not do raise ValueError naming the argument; an argument of no PyG loader raises
TypeError.
Usage: loader_input_nodes_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python)."""
import os
import sys

import numpy as np
import torch

import gs_testlib as t
import graphshard


def epoch_seeds(loader, seed_type=None):
    """[(part, seeds of each batch)] of one pass, and every batch's seed type store."""
    out = []
    for b in loader:
        store = b if seed_type is None else b[seed_type]
        if not 1 <= store.batch_size <= loader.batch_size:
            t.fail(f"batch_size {store.batch_size} for batch_size={loader.batch_size}")
        if store.num_sampled_nodes[0] != store.batch_size:
            t.fail(f"hop 0 has {store.num_sampled_nodes[0]} nodes, batch_size {store.batch_size}")
        out.append((b.part, store.n_id[:store.batch_size].clone()))
    return out


def expect_seeds(loader, want, what, seed_type=None, ordered=False):
    """One pass's seeds are exactly `want` (each once); `ordered`: in the order given per part."""
    got = epoch_seeds(loader, seed_type)
    seeds = torch.cat([s for _, s in got]) if got else torch.empty(0, dtype=torch.int64)
    if seeds.numel() != len(want) or set(seeds.tolist()) != set(int(i) for i in want):
        t.fail(f"{what}: {seeds.numel()} seeds ({len(set(seeds.tolist()))} distinct), want "
               f"{len(want)}")
    from_seed_ids = torch.cat(list(loader.seed_ids().values()))
    if sorted(from_seed_ids.tolist()) != sorted(int(i) for i in want):
        t.fail(f"{what}: loader.seed_ids() is not the nodes asked for")
    if len(got) != len(loader):
        t.fail(f"{what}: {len(got)} batches for len(loader) {len(loader)}")
    if ordered:
        name = seed_type or loader.metadata["target_type"]
        offsets = next(n for n in loader.metadata["node_types"]
                       if n["name"] == name)["part_offsets"]
        for part in range(len(offsets) - 1):
            mine = [int(i) for i in want if offsets[part] <= i < offsets[part + 1]]
            streamed = [int(i) for p, s in got if p == part for i in s]
            if streamed != mine:
                t.fail(f"{what}: part {part}'s seeds not in the order given")
    t.note(f"{what}: {len(got)} batches, seeds exactly the {len(want)} nodes asked for")


def check_homogeneous(registry):
    probe = graphshard.Loader(registry=registry, output="plain")
    md = probe.metadata
    n = md["num_nodes"]
    target = md["target_type"]
    ids = torch.arange(n - 1, 0, -7)  # descending: not the parts' own order
    expect_seeds(graphshard.Loader(registry=registry, input_nodes=ids, batch_size=64,
                                   output="plain"), ids.tolist(), "ids tensor", ordered=True)
    expect_seeds(graphshard.Loader(registry=registry, input_nodes=ids.numpy(), batch_size=64,
                                   output="plain"), ids.tolist(), "ids numpy")
    expect_seeds(graphshard.Loader(registry=registry, input_nodes=ids.tolist()[:100],
                                   batch_size=64, output="plain"), ids.tolist()[:100], "ids list")
    mask = torch.zeros(n, dtype=torch.bool)
    mask[ids] = True
    expect_seeds(graphshard.Loader(registry=registry, input_nodes=mask, batch_size=64,
                                   output="plain"), ids.tolist(), "mask")
    expect_seeds(graphshard.Loader(registry=registry, input_nodes=(target, mask), batch_size=64,
                                   output="plain"), ids.tolist(), "(type, mask)")
    expect_seeds(graphshard.Loader(registry=registry, input_nodes=(target, None), batch_size=500,
                                   output="plain"), range(n), "(type, None)")
    expect_seeds(graphshard.Loader(registry=registry, input_nodes=target, batch_size=500,
                                   output="plain"), range(n), "type")
    # shuffle=True: a permutation of the same seeds, every rank the same steps (equal_steps).
    loader = graphshard.Loader(registry=registry, input_nodes=ids, batch_size=64, shuffle=True,
                               seed=5, output="plain")
    if not loader.equal_steps:
        t.fail("input_nodes with shuffle=True: equal_steps should default to True")
    expect_seeds(loader, ids.tolist(), "shuffled ids")
    unshuffled = graphshard.Loader(registry=registry, input_nodes=ids, batch_size=64,
                                   output="plain")
    if unshuffled.shuffle or unshuffled.split is not None:
        t.fail(f"input_nodes: shuffle {unshuffled.shuffle} split {unshuffled.split!r}; "
               f"NeighborLoader's default is no shuffle")
    # The labels of the seeds are those of the nodes asked for (y is every node's label).
    first = next(iter(graphshard.Loader(registry=registry, input_nodes=ids, batch_size=64,
                                        output="plain")))
    full = {int(i): int(y) for b in graphshard.Loader(registry=registry, input_nodes=target,
                                                      batch_size=500, output="plain")
            for i, y in zip(b.n_id[:b.batch_size], b.y[:b.batch_size])}
    if any(full[int(i)] != int(y) for i, y in zip(first.n_id[:first.batch_size],
                                                   first.y[:first.batch_size])):
        t.fail("the seeds' y differ between input_nodes batches and whole-type batches")

    for bad, mention in [
            (dict(input_nodes=torch.tensor([0, n])), "input_nodes"),
            (dict(input_nodes=torch.tensor([-1])), "input_nodes"),
            (dict(input_nodes=torch.tensor([3, 4, 3])), "input_nodes"),
            (dict(input_nodes=torch.zeros(n + 1, dtype=torch.bool)), "input_nodes"),
            (dict(input_nodes=torch.zeros(n, dtype=torch.bool)), "input_nodes"),
            (dict(input_nodes=torch.tensor([0.5, 1.0])), "input_nodes"),
            (dict(input_nodes=("nope", None)), "input_nodes"),
            (dict(input_nodes=ids, split="val"), "input_nodes"),
            (dict(transform="pad"), "transform"),
            (dict(num_workers=4), "num_workers"),
            (dict(time_attr="time"), "time_attr"),
            (dict(filter_per_worker=True), "filter_per_worker"),
            (dict(disjoint=True), "disjoint"),
            (dict(drop_last=True), "drop_last"),
            (dict(pin_memory=True), "pin_memory"),
            (dict(input_time=torch.zeros(3)), "input_time")]:
        t.expect_error(ValueError, mention, lambda: graphshard.Loader(registry=registry, **bad))
    t.expect_error(TypeError, "no_such_argument",
                 lambda: graphshard.Loader(registry=registry, no_such_argument=1))
    # PyG's defaults change nothing and are accepted.
    graphshard.Loader(registry=registry, input_nodes=ids, num_workers=0, transform=None,
                      drop_last=False, disjoint=False, filter_per_worker=None, output="plain")
    t.note("bad input_nodes and unsupported PyG arguments raise naming them")


def check_hetero(env):
    partition = env.partition_imdb()
    registry, _ = env.start_servers(partition, registry=os.path.join(env.work, "reg_imdb"))
    md = graphshard.Loader(registry=registry, output="plain").metadata
    directors = next(n for n in md["node_types"] if n["name"] == "director")
    assert md["target_type"] != "director"
    ids = np.arange(0, directors["num_nodes"], 3)
    loader = graphshard.Loader(registry=registry, input_nodes=("director", ids), batch_size=40,
                               num_neighbors=[4, 3], output="plain")
    if loader.seed_type != "director":
        t.fail(f"seed_type {loader.seed_type!r}")
    expect_seeds(loader, ids.tolist(), "imdb ('director', ids)", seed_type="director",
                 ordered=True)
    for b in loader:
        if "batch_size" in b[md["target_type"]]:
            t.fail("batch_size on the target type of a director-seeded batch")
        if "y" not in b["director"]:
            t.fail("no y on the seed type")
    expect_seeds(graphshard.Loader(registry=registry, input_nodes="actor", batch_size=500,
                                   output="plain"),
                 range(next(n for n in md["node_types"] if n["name"] == "actor")["num_nodes"]),
                 "imdb 'actor'", seed_type="actor")
    t.expect_error(ValueError, "input_nodes",
                 lambda: graphshard.Loader(registry=registry, input_nodes=torch.tensor([1, 2])))


def main():
    env = t.Env()
    try:
        partition = env.partition_cora()
        registry, _ = env.start_servers(partition)
        check_homogeneous(registry)
        check_hetero(env)
    finally:
        env.cleanup()
    t.note("ok")


if __name__ == "__main__":
    sys.exit(main())
