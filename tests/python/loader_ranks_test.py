#!/usr/bin/env python3
"""graphshard.Loader and LinkLoader in 2 processes with torch.distributed initialised the way
PyG's mp.spawn examples do it (init_process_group(rank=r, world_size=2), no RANK in the
environment): each rank reads only servers on its own host (loader.server_hosts against
graphshard.host_id()), with assignment="part" one part each; the ranks' seeds are disjoint and
together exactly the nodes asked for (input_nodes), the split (split="train"), or the link
split's edges (LinkLoader); with assignment="spread" both ranks read both parts, half of each;
both ranks run the same number of steps when shuffling; and input_nodes that differ between
ranks raise ValueError naming input_nodes on every rank.
Usage: loader_ranks_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python)."""
import json
import os
import subprocess
import sys


def worker(rank, port, registry, link_registry):
    import torch
    import torch.distributed as dist

    import graphshard
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    out = {"host": graphshard.host_id()}

    def record(name, loader, seed_store=None):
        seeds = []
        for b in loader:
            if b is None:
                continue
            if seed_store is not None:  # node batches: the seeds streamed
                store = b if seed_store == "" else b[seed_store]
                seeds += store.n_id[:store.batch_size].tolist()
        out[name] = {"rank": loader.rank, "world_size": loader.world_size,
                     "shares": loader.shares, "server_hosts": loader.server_hosts,
                     "steps": len(loader), "streamed": seeds,
                     "seed_ids": {str(p): ids.tolist() for p, ids in loader.seed_ids().items()}}

    n = graphshard.Loader(registry=registry, output="plain").metadata["num_nodes"]
    ids = torch.arange(1, n, 3)
    record("input_nodes", graphshard.Loader(registry=registry, input_nodes=ids, batch_size=64,
                                            output="plain"), "")
    record("input_nodes_shuffled", graphshard.Loader(
        registry=registry, input_nodes=ids, batch_size=64, shuffle=True, output="plain"), "")
    record("spread", graphshard.Loader(registry=registry, input_nodes=ids, batch_size=64,
                                       assignment="spread", output="plain"), "")
    record("train", graphshard.Loader(registry=registry, batch_size=64, output="plain"), "")
    record("link", graphshard.LinkLoader(registry=link_registry, batch_size=128,
                                         neg_sampling="binary", output="plain"))
    out["ids"] = ids.tolist()
    try:
        graphshard.Loader(registry=registry, input_nodes=ids[rank:], output="plain")
        out["differing"] = "accepted"
    except ValueError as e:
        out["differing"] = str(e)
    dist.barrier()
    print(json.dumps(out))


def main():
    import gs_testlib as t
    env = t.Env()
    try:
        registry, _ = env.start_servers(env.partition_cora())
        link_part = os.path.join(env.work, "cora_link")
        t.run([os.path.join(env.bin, "graphshard-partition"), "partition", "--input",
               os.path.join(env.src, "tests/data/cora"), "--parts", "2", "--method", "random",
               "--undirected", "--edge-split", "0.85,0.05,0.10", "--seed", "1", "--out",
               link_part], 120)
        link_registry, _ = env.start_servers(link_part,
                                             registry=os.path.join(env.work, "reg_link"))
        port = t.free_port()
        e = {k: v for k, v in os.environ.items()
             if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS")}
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(r), str(port),
                                   registry, link_registry], env=e, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for r in range(2)]
        results = [json.loads(out.strip().splitlines()[-1])
                   for out in t.collect_ranks(procs, 300)]
        check(t, results)
    finally:
        env.cleanup()
    t.note("ok")


def seeds_of(r):
    return [i for ids in r["seed_ids"].values() for i in ids]


def check(t, results):
    ids = set(results[0]["ids"])
    for name in ("input_nodes", "input_nodes_shuffled", "spread", "train", "link"):
        per_rank = [res[name] for res in results]
        for rank, r in enumerate(per_rank):
            if (r["rank"], r["world_size"]) != (rank, 2):
                t.fail(f"{name}: rank {r['rank']} of {r['world_size']} from torch.distributed")
            for part, _, _ in r["shares"]:  # host-local: only servers of this rank's host
                if r["server_hosts"][part] != results[rank]["host"]:
                    t.fail(f"{name}: rank {rank} reads part {part} on another host")
            # (equal steps may wrap around a rank's seeds: some stream twice)
            if name != "link" and set(r["streamed"]) != set(seeds_of(r)):
                t.fail(f"{name}: rank {rank} streamed other seeds than loader.seed_ids()")
        if name == "link":  # positions per part: disjoint between ranks on each part
            for part in ("0", "1"):
                a = set(per_rank[0]["seed_ids"].get(part, []))
                b = set(per_rank[1]["seed_ids"].get(part, []))
                if a & b:
                    t.fail(f"link: both ranks have edges {sorted(a & b)[:5]} of part {part}")
            if not all(seeds_of(r) for r in per_rank):
                t.fail("link: a rank without edges")
        else:
            a, b = (set(seeds_of(r)) for r in per_rank)
            if a & b:
                t.fail(f"{name}: ranks share seeds {sorted(a & b)[:5]}")
            if name != "train" and a | b != ids:
                t.fail(f"{name}: the ranks' seeds are not the nodes asked for "
                       f"({len(a | b)} vs {len(ids)})")
            if name == "train" and len(a | b) != 140:
                t.fail(f"train: {len(a | b)} seeds on both ranks, Cora's train split has 140")
            if not a or not b:
                t.fail(f"{name}: a rank without seeds")
        shares = [sorted(tuple(s) for s in r["shares"]) for r in per_rank]
        if name == "spread":
            if shares != [[(0, 0, 2), (1, 0, 2)], [(0, 1, 2), (1, 1, 2)]]:
                t.fail(f"spread: shares {shares}")
        elif shares != [[(0, 0, 1)], [(1, 0, 1)]]:
            t.fail(f"{name}: shares {shares}, expected part r for rank r")
        if name in ("input_nodes_shuffled", "train", "link") and \
                per_rank[0]["steps"] != per_rank[1]["steps"]:
            t.fail(f"{name}: steps {per_rank[0]['steps']} vs {per_rank[1]['steps']}")
        t.note(f"{name}: shares {shares}, {[len(seeds_of(r)) for r in per_rank]} seeds, disjoint")
    for rank, res in enumerate(results):
        if "input_nodes" not in res["differing"]:
            t.fail(f"rank {rank}: differing input_nodes gave {res['differing']!r}")
    t.note("differing input_nodes raise ValueError on every rank")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        main()
