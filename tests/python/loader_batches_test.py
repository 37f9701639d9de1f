#!/usr/bin/env python3
"""graphshard.Loader's batches equal the C++ side's for the same (seed, epoch, batch): 2 real
servers on Cora; the loader (one rank, so it reads both parts, through shared memory) against
tests/tools/batch_digest --dump (plain gRPC, inline bytes, shuffle seed StreamShuffleSeed(seed,
part) as graphshard-trainer --seed uses), array by array, in several sampling configurations
(float32, float16 and bfloat16 features, fanout -1, read ahead by the prefetch thread), and with
feature_store="device" (rows gathered from the loader's copy) the same batches bit for bit. Also: the tensors of a shared-memory batch
are views of the segment (no copy), and every epoch and batch index is seen exactly once; IMDB
(heterogeneous) likewise, and batches sent inline (servers with --shm=false) too.
Usage: loader_batches_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python)."""
import os
import sys

import numpy as np
import torch

import gs_testlib as t
import graphshard

CONFIGS = [
    dict(num_neighbors=[10, 5], batch_size=64, feature_dtype="float32", seed=3, epoch=2),
    # Read ahead by the loader's background thread (device="cpu": no copy).
    dict(num_neighbors=[5, -1], batch_size=100, feature_dtype="float16", seed=11, epoch=1,
         device="cpu", prefetch=3),
    dict(num_neighbors=[4, 3], batch_size=50, feature_dtype="bfloat16", seed=0, epoch=5),
]


def mapping_of(address):
    """The /proc/self/maps line of the mapping holding `address` ('' if none)."""
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= address < hi:
                return line.strip()
    return ""


def read(path, dtype):
    return np.fromfile(path, dtype=dtype)


def check_config(env, registry, addresses, cfg, shm=True):
    loader = graphshard.Loader(registry=registry, split="train", output="plain", **cfg)
    assert loader.world_size == 1 and loader.shares == [(0, 0, 1), (1, 0, 1)], loader.shares
    seen = {}
    for batch in loader:
        key = (batch.part, batch.epoch, batch.batch_index)
        if key in seen:
            t.fail(f"batch {key} twice")
        seen[key] = batch
    if loader.epoch != cfg["epoch"] + 1:
        t.fail(f"loader.epoch {loader.epoch} after one pass from {cfg['epoch']}")
    if len(seen) != len(loader):
        t.fail(f"{len(seen)} batches for {len(loader)} steps")

    dump = os.path.join(env.work, f"dump_{len(os.listdir(env.work))}")
    os.makedirs(dump)
    seeds = [graphshard.stream_shuffle_seed(cfg["seed"], p) for p in range(2)]
    t.run([os.path.join(env.bin, "batch_digest"), "--servers", ",".join(addresses),
           "--epochs", "1", "--first-epoch", str(cfg["epoch"]), "--batch-size",
           str(cfg["batch_size"]), "--fanouts", ",".join(map(str, cfg["num_neighbors"])),
           "--dtype", cfg["feature_dtype"], "--shuffle-seeds", ",".join(map(str, seeds)),
           "--dump", dump], 120)
    files = sorted(os.listdir(dump))
    expected = {tuple(int(x[1:]) for x in f.split("_")[:3]) for f in files}
    if set(seen) != expected:
        t.fail(f"loader batches {sorted(seen)} vs C++ {sorted(expected)}")
    fdtype = {"float32": np.float32, "float16": np.float16, "bfloat16": np.int16}[cfg["feature_dtype"]]
    for (part, epoch, index), b in seen.items():
        stem = os.path.join(dump, f"s{part}_e{epoch}_b{index}_")
        x = b.x.view(torch.int16) if cfg["feature_dtype"] == "bfloat16" else b.x
        pairs = [("n0_ids", b.n_id, np.int64), ("n0_features", x.reshape(-1), fdtype),
                 ("n0_labels", b.y, np.int64), ("e0_src", b.edge_index[0], np.int64),
                 ("e0_dst", b.edge_index[1], np.int64)]
        for name, tensor, dtype in pairs:
            want = read(stem + name, dtype)
            if not np.array_equal(tensor.contiguous().numpy(), want):
                t.fail(f"batch {(part, epoch, index)} {name} differs from the C++ client's")
        if b.num_sampled_nodes != read(stem + "n0_num_sampled", np.int64).tolist() or \
                b.num_sampled_edges != read(stem + "e0_num_sampled", np.int64).tolist():
            t.fail(f"batch {(part, epoch, index)}: per-hop counts differ")
        if len(b.num_sampled_nodes) != len(cfg["num_neighbors"]) + 1:
            t.fail(f"num_sampled_nodes {b.num_sampled_nodes} for {cfg['num_neighbors']}")
        if not 1 <= b.batch_size <= cfg["batch_size"]:
            t.fail(f"batch_size {b.batch_size}")
        # Zero copy: x, y, n_id and edge_index lie in the server's shared-memory segment, mapped
        # here (/proc/self/maps names /dev/shm), not in memory torch or numpy allocated.
        for name, tensor in [("x", b.x), ("y", b.y), ("n_id", b.n_id),
                             ("edge_index", b.edge_index)]:
            if shm and tensor.numel() and "/dev/shm/" not in mapping_of(tensor.data_ptr()):
                t.fail(f"batch {(part, epoch, index)} {name} at {tensor.data_ptr():#x} is not in "
                       f"a shared-memory mapping: {mapping_of(tensor.data_ptr())!r}")
    t.note(f"{cfg}: {len(seen)} batches equal the C++ client's"
           + (", tensors in shared memory" if shm else " (inline gRPC bytes)"))


def check_hetero(env):
    """IMDB (movie, director, actor): HeteroBatch fields per type, against the dump by block."""
    partition = env.partition_imdb()
    registry, addresses = env.start_servers(partition, registry=os.path.join(env.work, "reg_imdb"))
    loader = graphshard.Loader(registry=registry, num_neighbors=[5, 3], batch_size=128, seed=2,
                               output="plain")
    md = loader.metadata
    types = [n["name"] for n in md["node_types"]]
    batches = {(b.part, b.epoch, b.batch_index): b for b in loader}
    dump = os.path.join(env.work, "dump_imdb")
    os.makedirs(dump)
    seeds = [graphshard.stream_shuffle_seed(2, p) for p in range(2)]
    t.run([os.path.join(env.bin, "batch_digest"), "--servers", ",".join(addresses), "--epochs",
           "1", "--batch-size", "128", "--fanouts", "5,3", "--shuffle-seeds",
           ",".join(map(str, seeds)), "--dump", dump], 120)
    for (part, epoch, index), b in batches.items():
        stem = os.path.join(dump, f"s{part}_e{epoch}_b{index}_")
        for i, name in enumerate(types):
            store = b[name]
            checks = [("ids", store.n_id, np.int64), ("num_sampled", None, np.int64)]
            if md["node_types"][i]["feat_dim"] > 0:
                checks.append(("features", store.x.reshape(-1), np.float32))
            if "y" in store:
                checks.append(("labels", store.y, np.int64))
            for what, tensor, dtype in checks:
                want = read(f"{stem}n{i}_{what}", dtype)
                got = (np.array(store.num_sampled_nodes) if tensor is None
                       else tensor.contiguous().numpy())
                if not np.array_equal(got, want):
                    t.fail(f"imdb batch {(part, epoch, index)} {name} {what} differs")
        for j, e in enumerate(md["edge_types"]):
            rel = e["name"][len(e["src"]) + 2:len(e["name"]) - len(e["dst"]) - 2]
            store = b[(e["src"], rel, e["dst"])]
            for row, what in ((0, "src"), (1, "dst")):
                if not np.array_equal(store.edge_index[row].numpy(),
                                      read(f"{stem}e{j}_{what}", np.int64)):
                    t.fail(f"imdb batch {(part, epoch, index)} {e['name']} {what} differs")
        if b[md["target_type"]].batch_size < 1:
            t.fail("no batch_size on the target type")
    expected = {tuple(int(x[1:]) for x in f.split("_")[:3]) for f in os.listdir(dump)}
    if len(batches) != len(loader) or set(batches) != expected:
        t.fail(f"imdb: loader batches {sorted(batches)} vs C++ {sorted(expected)}")
    t.note(f"imdb: {len(batches)} heterogeneous batches equal the C++ client's")


def check_device_store(registry, cfg, hetero=False):
    """feature_store="device": the same batches as feature_store="server", with x gathered from
    the loader's own copy of the rows (equal bit for bit), y the seeds' labels (-1 elsewhere)."""
    got = {}
    for store in ("server", "device", "auto"):
        loader = graphshard.Loader(registry=registry, split="train", output="plain",
                                   feature_store=store, **cfg)
        got[store] = {(b.part, b.epoch, b.batch_index): b for b in loader}
        # Read ahead (device="cpu"): the thread's CPU seconds, the batch building's among them.
        if cfg.get("device") is not None and not (
                0 < loader.build_cpu_s <= loader.read_ahead_cpu_s + 0.01):
            t.fail(f"read ahead ({store}): CPU seconds {loader.read_ahead_cpu_s}, building "
                   f"{loader.build_cpu_s}: expected building > 0, within the thread's")
        # "auto" off a GPU: rows come with the batches, exactly as "server".
        if store == "auto" and loader.feature_store != "server":
            t.fail(f"feature_store='auto' without a GPU chose {loader.feature_store!r}")
    if set(got["auto"]) != set(got["server"]):
        t.fail(f"auto store: batches {sorted(got['auto'])} vs {sorted(got['server'])}")
    if set(got["server"]) != set(got["device"]) or not got["server"]:
        t.fail(f"device store: batches {sorted(got['device'])} vs {sorted(got['server'])}")
    md = loader.metadata
    types = [n["name"] for n in md["node_types"]]
    for key, a in got["server"].items():
        b = got["device"][key]
        stores = [(a[n], b[n]) for n in types] if hetero else [(a, b)]
        for i, (sa, sb) in enumerate(stores):
            is_seed = not hetero or types[i] == md["target_type"]
            if not torch.equal(sa.n_id, sb.n_id):
                t.fail(f"device store: batch {key} type {i} n_id differs")
            if md["node_types"][i]["feat_dim"] > 0:
                xa, xb = sa.x, sb.x
                if xa.dtype == torch.bfloat16:
                    xa, xb = xa.view(torch.int16), xb.view(torch.int16)
                if xa.dtype != xb.dtype or not torch.equal(xa, xb):
                    t.fail(f"device store: batch {key} type {i} x differs ({xb.dtype})")
            sc = got["auto"][key][types[i]] if hetero else got["auto"][key]
            if md["node_types"][i]["feat_dim"] > 0 and not torch.equal(
                    sa.x.view(torch.int16) if sa.x.dtype == torch.bfloat16 else sa.x,
                    sc.x.view(torch.int16) if sc.x.dtype == torch.bfloat16 else sc.x):
                t.fail(f"auto store: batch {key} type {i} x differs from 'server'")
            if is_seed:
                if not torch.equal(sa.y, sc.y):
                    t.fail(f"auto store: batch {key} y differs from 'server'")
                k = sa.batch_size
                if not torch.equal(sa.y[:k], sb.y[:k]) or bool((sb.y[k:] != -1).any()):
                    t.fail(f"device store: batch {key} y is not the seeds' labels then -1")
    t.note(f"device store {cfg.get('feature_dtype', 'float32')}{' (imdb)' if hetero else ''}: "
           f"{len(got['device'])} batches equal feature_store='server'")


def check_tiered_store(registry, cfg, hetero=False):
    """feature_store="device" with a device tier of 10% of the table (device_cache_mib): the same
    batches and x as every row on the device, most rows read from host memory, and the hit rate
    reported."""
    full = graphshard.Loader(registry=registry, split="train", output="plain",
                             feature_store="device", device="cpu", **cfg)
    want = {(b.part, b.epoch, b.batch_index): b for b in full}
    if full.feature_tiers is not None:
        t.fail("every row on the device: feature_tiers should be None")
    table_mib = sum(n["num_nodes"] * n["feat_dim"] * 4 for n in full.metadata["node_types"]) / 2**20
    tiny = graphshard.Loader(registry=registry, split="train", output="plain",
                             feature_store="device", device="cpu",
                             device_cache_mib=0.1 * table_mib, **cfg)  # 10% of the rows' bytes
    got = {(b.part, b.epoch, b.batch_index): b for b in tiny}
    if set(got) != set(want) or not want:
        t.fail(f"tiered store: batches {sorted(got)} vs {sorted(want)}")
    types = [n["name"] for n in full.metadata["node_types"]]
    for key, a in want.items():
        b = got[key]
        for sa, sb in ([(a[n], b[n]) for n in types] if hetero else [(a, b)]):
            if getattr(sa, "x", None) is not None and not torch.equal(sa.x, sb.x):
                t.fail(f"tiered store: batch {key} x differs from every row on the device")
    tiers = tiny.feature_tiers
    if tiers is None or not 0 < tiers["device_hit_rate"] < 1 or tiers["host_rows"] == 0:
        t.fail(f"tiered store: feature_tiers {tiers} (expected hits in both tiers)")
    if not 0 < tiers["expected_device_hit_rate"] <= 1:
        t.fail(f"tiered store: pre-sampled hit rate {tiers['expected_device_hit_rate']}")
    for bad in (-1, "lots"):
        try:
            graphshard.Loader(registry=registry, split="train", feature_store="device",
                              device_cache_mib=bad, **cfg)
        except ValueError as e:
            if "device_cache_mib" not in str(e):
                t.fail(f"device_cache_mib={bad!r}: message {e!r} does not name it")
        else:
            t.fail(f"device_cache_mib={bad!r} accepted")
    try:
        graphshard.Loader(registry=registry, split="train", feature_store="server",
                          device_cache_mib=1, **cfg)
        t.fail("device_cache_mib with feature_store='server' accepted")
    except ValueError as e:
        if "device_cache_mib" not in str(e):
            t.fail(f"device_cache_mib with 'server': message {e!r} does not name it")
    t.note(f"tiered store{' (imdb)' if hetero else ''}: {len(got)} batches equal every row on "
           f"the device; device hit rate {tiers['device_hit_rate']:.3f} (pre-sampled "
           f"{tiers['expected_device_hit_rate']:.3f}), {tiers['host_mib']:.2f} MiB from host")


def main():
    env = t.Env()
    try:
        env.need("batch_digest")
        partition = env.partition_cora()
        registry, addresses = env.start_servers(partition)
        for cfg in CONFIGS:
            check_config(env, registry, addresses, cfg)
        check_hetero(env)
        check_device_store(registry, CONFIGS[0])
        check_device_store(registry, CONFIGS[2])  # bfloat16 rows
        check_device_store(registry, CONFIGS[1])  # read ahead on device="cpu"
        check_device_store(os.path.join(env.work, "reg_imdb"),
                           dict(num_neighbors=[5, 3], batch_size=128, seed=2), hetero=True)
        check_tiered_store(registry, CONFIGS[0])
        check_tiered_store(os.path.join(env.work, "reg_imdb"),
                           dict(num_neighbors=[5, 3], batch_size=128, seed=2), hetero=True)
        # Servers without shared memory: batches inline in the gRPC messages, read in place.
        registry, addresses = env.start_servers(partition, registry=os.path.join(env.work, "reg2"),
                                                extra=("--shm=false",))
        check_config(env, registry, addresses, CONFIGS[2], shm=False)
        # Bad options are ValueErrors / graphshard.Error naming the option, not crashes.
        for bad, mention in [(dict(split="nope"), "split"), (dict(batch_size=0), "batch_size"),
                             (dict(num_neighbors=[0]), "num_neighbors"),
                             (dict(feature_dtype="int8"), "feature_dtype"),
                             (dict(assignment="round-robin"), "assignment"),
                             (dict(feature_store="gpu"), "feature_store")]:
            try:
                graphshard.Loader(registry=registry, **bad)
            except (ValueError, graphshard.Error) as e:
                if mention not in str(e):
                    t.fail(f"{bad}: message {e!r} does not name {mention}")
            else:
                t.fail(f"{bad} accepted")
    finally:
        env.cleanup()
    t.note("ok")


if __name__ == "__main__":
    sys.exit(main())
