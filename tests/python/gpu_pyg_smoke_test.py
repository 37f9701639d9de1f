#!/usr/bin/env python3
"""The Python path where PyG users run it (label gpu: the GPU machine's PyTorch, NumPy and
torch_geometric, CUDA), PyG's own models over graphshard's loaders, 2 real servers each:

 1. homogeneous: Cora, graphshard.Loader(device="cuda"), torch_geometric.nn.GraphSAGE, 10 epochs:
    test accuracy >= 0.70 (the C++ trainer's Cora bar is 0.75 with GCN/SAGE at 40 epochs);
 2. heterogeneous: IMDB as HeteroData, to_hetero(GraphSAGE), 6 epochs: test accuracy >= 0.50
    (3 genres; the C++ hetero SAGE's bar, HAN ~0.57);
 2b. the example's --trim bipartite form (PyG's convs on (x, x[:n_dst])) equals
    model(x, edge_index) and trim_to_layer on the seeds;
 2c. graphshard.PadToStatic (the example's --cuda-graphs): padded batches give PyG's GraphSAGE
    the unpadded seed outputs (model(x, edge_index), trim_to_layer, bipartite form), and the
    loss compiled with torch.compile(mode="reduce-overhead") (CUDA graphs replayed) equals the
    eager loss on the same weights and batches;
 2d. examples/pyg_products_train.py end to end on Cora (10 epochs, --eval): its defaults and
    --cuda-graphs --fused-adam on 1 GPU, and 2 ranks with torchrun's environment (NCCL on 2
    GPUs; on one GPU the ranks share it over gloo): test accuracy >= 0.70, every test seed
    counted once, the ranks' weights equal;
 3. link prediction: Cora with an 85/5/10 edge split, graphshard.LinkLoader (binary negatives),
    GraphSAGE encoder and a dot-product decoder, 10 epochs: validation accuracy of the edge labels
    >= 0.65 (chance 0.5) and the training loss falls;
 4. 2 ranks through torch DDP (mp.spawn): each rank's loader on its own GPU over NCCL, the ranks'
    seeds disjoint and covering the train split, and the same weights on both ranks after an
    epoch. On a machine with one GPU both ranks share it over gloo, and the output says so (a
    stand-in for the 2-GPU run, not the same thing).

Fails (never skips) without CUDA or torch_geometric.
Usage: gpu_pyg_smoke_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python)."""
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import gs_testlib as t
import graphshard


def need_stack():
    if not torch.cuda.is_available():
        t.fail("no CUDA device: this test runs on the GPU machine")
    try:
        import torch_geometric
    except ImportError as e:
        t.fail(f"torch_geometric does not import: {e}")
    t.note(f"torch {torch.__version__}, numpy {np.__version__}, torch_geometric "
           f"{torch_geometric.__version__}, {torch.cuda.device_count()} x "
           f"{torch.cuda.get_device_name(0)}")


def accuracy(model, loader, forward):
    model.eval()
    right = total = 0
    with torch.no_grad():
        for b in loader:
            out, y = forward(b)
            right += int((out.argmax(-1) == y).sum())
            total += y.numel()
    model.train()
    return right / max(total, 1)


def train(model, loader, forward, opt, epochs):
    """Cross-entropy on the seeds, `epochs` passes over `loader`."""
    for _ in range(epochs):
        for b in loader:
            out, y = forward(b)
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()


def check_homogeneous(registry):
    from torch_geometric.data import Data
    from torch_geometric.nn import GraphSAGE
    dev = torch.device("cuda")
    train_loader = graphshard.Loader(registry=registry, split="train", num_neighbors=[10, 5],
                              batch_size=64, shuffle=True, device=dev, output="pyg")
    test = graphshard.Loader(registry=registry, split="test", num_neighbors=[10, 5],
                             batch_size=512, device=dev, output="pyg")
    md = train_loader.metadata
    model = GraphSAGE(md["feat_dim"], 64, num_layers=2, out_channels=md["num_classes"],
                      dropout=0.5).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

    def forward(b):
        if not isinstance(b, Data) or b.x.device.type != "cuda":
            t.fail(f"a batch is {type(b).__name__} on {b.x.device}, not PyG Data on cuda")
        out = model(b.x.float(), b.edge_index)[:b.batch_size]
        return out, b.y[:b.batch_size]

    start = time.time()
    train(model, train_loader, forward, opt, 10)
    acc = accuracy(model, test, forward)
    t.note(f"cora GraphSAGE on cuda: test accuracy {acc:.3f} after 10 epochs "
           f"({time.time() - start:.1f} s)")
    if acc < 0.70:
        t.fail(f"cora test accuracy {acc:.3f} < 0.70")


def check_bipartite_form(registry, src):
    """examples/pyg_products_train.py --trim bipartite (the model's convs one by one on
    (x, x[:n_dst])) gives the seeds the outputs of model(x, edge_index) and of PyG's
    trim_to_layer, on 3-hop batches."""
    import sys
    from torch_geometric.nn import GraphSAGE
    sys.path.insert(0, os.path.join(src, "examples"))
    from pyg_products_train import bipartite_forward
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    loader = graphshard.Loader(registry=registry, split="test", num_neighbors=[5, 4, 3],
                               batch_size=128, device=dev, output="pyg")
    md = loader.metadata
    torch.manual_seed(3)
    model = GraphSAGE(md["feat_dim"], 32, num_layers=3, out_channels=md["num_classes"],
                      dropout=0.5).to(dev).eval()
    batches = 0
    with torch.no_grad():
        for b in loader:
            x = b.x.float()
            full = model(x, b.edge_index)[:b.batch_size]
            trimmed = model(x, b.edge_index, num_sampled_nodes_per_hop=b.num_sampled_nodes,
                            num_sampled_edges_per_hop=b.num_sampled_edges)[:b.batch_size]
            bip = bipartite_forward(model, x, b.edge_index, b.num_sampled_nodes,
                                    b.num_sampled_edges)[:b.batch_size]
            if bip.shape != full.shape:
                t.fail(f"bipartite form gave {tuple(bip.shape)}, the model {tuple(full.shape)}")
            for name, ref in (("model(x, edge_index)", full), ("trim_to_layer", trimmed)):
                err = float((bip - ref).abs().max())
                if err > 1e-4:
                    t.fail(f"bipartite form differs from {name} by {err:.2e}")
            batches += 1
    if batches == 0:
        t.fail("no test batches")
    t.note(f"bipartite form equals model(x, edge_index) and trim_to_layer on {batches} batches")


def check_hetero(env):
    from torch_geometric.data import HeteroData
    from torch_geometric.nn import GraphSAGE, to_hetero
    part = env.partition_imdb()
    registry, _ = env.start_servers(part, registry=os.path.join(env.work, "reg_imdb"))
    dev = torch.device("cuda")
    train_loader = graphshard.Loader(registry=registry, split="train", num_neighbors=[10, 10],
                              batch_size=64, shuffle=True, device=dev, output="pyg")
    test = graphshard.Loader(registry=registry, split="test", num_neighbors=[10, 10],
                             batch_size=512, device=dev, output="pyg")
    target = train_loader.metadata["target_type"]
    first = next(iter(train_loader))
    if not isinstance(first, HeteroData):
        t.fail(f"a heterogeneous batch is {type(first).__name__}, not HeteroData")
    classes = train_loader.metadata["num_classes"]
    model = to_hetero(GraphSAGE((-1, -1), 32, num_layers=2, out_channels=classes),
                      first.metadata(), aggr="sum").to(dev)

    def forward(b):
        x = {k: v.float() for k, v in b.x_dict.items()}
        out = model(x, b.edge_index_dict)[target][:b[target].batch_size]
        return out, b[target].y[:b[target].batch_size]

    with torch.no_grad():
        forward(first)  # lazy shapes
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=1e-3)
    train(model, train_loader, forward, opt, 6)
    acc = accuracy(model, test, forward)
    t.note(f"imdb to_hetero(GraphSAGE) on cuda: test accuracy {acc:.3f} ({target})")
    if acc < 0.50:
        t.fail(f"imdb test accuracy {acc:.3f} < 0.50")


def check_padded(registry, src):
    """PadToStatic on CUDA with PyG's GraphSAGE: same seed outputs as unpadded; the CUDA-graph
    loss (example's --cuda-graphs) equals the eager one."""
    import sys
    from torch_geometric.nn import GraphSAGE
    sys.path.insert(0, os.path.join(src, "examples"))
    from pyg_products_train import bipartite_forward
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    common = dict(registry=registry, split="train", num_neighbors=[5, 4, 3], batch_size=32,
                  shuffle=True, seed=5, device=dev, output="pyg")
    pad = graphshard.PadToStatic()
    plain, padded = graphshard.Loader(**common), graphshard.Loader(**common, transform=pad)
    md = plain.metadata
    torch.manual_seed(3)
    model = GraphSAGE(md["feat_dim"], 32, num_layers=3, out_channels=md["num_classes"],
                      dropout=0.5).to(dev).eval()

    def outputs(b):
        x = b.x.float()
        hops = dict(num_sampled_nodes_per_hop=b.num_sampled_nodes,
                    num_sampled_edges_per_hop=b.num_sampled_edges)
        return [model(x, b.edge_index)[:b.batch_size],
                model(x, b.edge_index, **hops)[:b.batch_size],
                bipartite_forward(model, x, b.edge_index, b.num_sampled_nodes,
                                  b.num_sampled_edges)[:b.batch_size]]

    def loss_of(x, edge_index, y, nodes, edges, seeds):
        out = model(x, edge_index, num_sampled_nodes_per_hop=list(nodes),
                    num_sampled_edges_per_hop=list(edges))[:seeds]
        return F.cross_entropy(out, y[:seeds])
    graphed = torch.compile(loss_of, mode="reduce-overhead", dynamic=False)
    batches = 0
    for a, b in zip(plain, padded):
        if b.x.shape[0] != sum(b.num_sampled_nodes) or b.num_seeds != a.batch_size or \
                b.batch_size != b.num_sampled_nodes[0]:
            t.fail(f"padded batch: x {tuple(b.x.shape)}, hops {b.num_sampled_nodes}, "
                   f"{b.num_seeds} seeds of {a.batch_size}")
        with torch.no_grad():
            for name, ref, got in zip(("model", "trim_to_layer", "bipartite"), outputs(a),
                                      outputs(b)):
                err = float((got[:a.batch_size] - ref).abs().max())
                if err > 1e-4:
                    t.fail(f"padded {name} output differs by {err:.2e}")
        args = (b.x.float(), b.edge_index, b.y, tuple(b.num_sampled_nodes),
                tuple(b.num_sampled_edges), b.batch_size)
        eager = loss_of(*args)
        torch.compiler.cudagraph_mark_step_begin()
        replayed = graphed(*args)
        replayed.backward()  # the backward graph too
        if abs(float(replayed) - float(eager)) > 1e-4 * max(1.0, abs(float(eager))):
            t.fail(f"CUDA-graph loss {float(replayed):.6f} != eager {float(eager):.6f}")
        model.zero_grad(set_to_none=True)
        batches += 1
    if batches < 3:
        t.fail(f"{batches} padded batches")
    t.note(f"PadToStatic: {batches} batches, {pad.grew + 1} shape(s): PyG outputs as unpadded, "
           f"CUDA-graph loss = eager")


def check_example(registry, env):
    """examples/pyg_products_train.py as a user runs it, on Cora (see the module docstring)."""
    import json
    import subprocess
    import sys
    script = os.path.join(env.src, "examples", "pyg_products_train.py")
    base = [sys.executable, script, "--registry", registry, "--epochs", "10", "--fanouts",
            "10,5", "--batch-size", "64", "--hidden", "64", "--lr", "0.01", "--eval"]

    def run(extra, world=1):
        port = t.free_port()
        procs = []
        for rank in range(world):
            e = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                     LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                     MASTER_PORT=str(port))
            procs.append(subprocess.Popen(base + extra, env=e, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        results = [[json.loads(line) for line in out.splitlines() if line.startswith("{")]
                   for out in t.collect_ranks(procs, 300, f"the example {extra} rank")]
        return results

    gpus = torch.cuda.device_count()
    for extra, world in (([], 1), (["--cuda-graphs", "--fused-adam", "--pad-headroom", "0.5"], 1),
                         ([], 2)):
        ranks = run(extra, world)
        summaries = [lines[-1] for lines in ranks]
        epochs = [r for r in ranks[0] if "epoch" in r]
        s0 = summaries[0]
        what = f"example {' '.join(extra) or 'defaults'}, {world} rank(s)"
        if len(epochs) != 10 or s0.get("world_size") != world:
            t.fail(f"{what}: {len(epochs)} epoch lines, world_size {s0.get('world_size')}")
        if s0.get("test_seeds") != 1000 or s0.get("test_acc", 0) < 0.70:
            t.fail(f"{what}: test accuracy {s0.get('test_acc')} over {s0.get('test_seeds')} "
                   f"seeds (Cora: 1000, bar 0.70)")
        if len({s["weights"] for s in summaries}) != 1:
            t.fail(f"{what}: the ranks' weights differ: {[s['weights'] for s in summaries]}")
        if "--cuda-graphs" in extra and not (s0.get("cuda_graphs") and s0.get("shapes", 0) >= 1):
            t.fail(f"{what}: summary {s0}")
        how = "" if world == 1 else (" (2 GPUs, NCCL)" if gpus >= 2 else
                                     " (sharing 1 GPU over gloo: a stand-in)")
        t.note(f"{what}{how}: test accuracy {s0['test_acc']:.3f}, last epoch "
               f"{epochs[-1]['time_s']:.2f} s" + (f", {s0['shapes']} shape(s)"
                                                 if "shapes" in s0 else ""))


def check_link(env):
    from torch_geometric.nn import GraphSAGE
    part = os.path.join(env.work, "cora_link")
    t.run([os.path.join(env.bin, "graphshard-partition"), "partition", "--parts", "2",
           "--method", "random", "--seed", "1", "--out", part, "--input",
           os.path.join(env.src, "tests/data/cora"), "--undirected", "--edge-split",
           "0.85,0.05,0.10"], 120)
    registry, _ = env.start_servers(part, registry=os.path.join(env.work, "reg_link"))
    dev = torch.device("cuda")
    train_loader = graphshard.LinkLoader(registry=registry, num_neighbors=[10, 5], batch_size=128,
                                  neg_sampling="binary", shuffle=True, device=dev, output="pyg")
    val = graphshard.LinkLoader(registry=registry, split="val", num_neighbors=[10, 5],
                                batch_size=512, neg_sampling="binary", device=dev, output="pyg")
    dim = train_loader.metadata["feat_dim"]
    model = GraphSAGE(dim, 64, num_layers=2, out_channels=64).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.005)

    def scores(b):
        z = model(b.x.float(), b.edge_index)
        return (z[b.edge_label_index[0]] * z[b.edge_label_index[1]]).sum(-1), b.edge_label

    losses = []
    for _ in range(10):
        total, n = 0.0, 0
        for b in train_loader:
            s, label = scores(b)
            loss = F.binary_cross_entropy_with_logits(s, label)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * label.numel()
            n += label.numel()
        losses.append(total / max(n, 1))
    model.eval()
    right = count = 0
    with torch.no_grad():
        for b in val:
            s, label = scores(b)
            right += int(((s > 0).float() == label).sum())
            count += label.numel()
    acc = right / max(count, 1)
    t.note(f"cora link prediction on cuda: loss {losses[0]:.3f} -> {losses[-1]:.3f}, val edge "
           f"accuracy {acc:.3f} over {count} labelled edges")
    if not losses[-1] < 0.9 * losses[0]:
        t.fail(f"link training loss did not fall: {losses}")
    if acc < 0.65:
        t.fail(f"link validation accuracy {acc:.3f} < 0.65")


def ddp_rank(rank, world, registry, port, out_dir):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch_geometric.nn import GraphSAGE
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    gpus = torch.cuda.device_count()
    torch.cuda.set_device(rank % gpus)
    dist.init_process_group("nccl" if gpus >= world else "gloo", rank=rank, world_size=world)
    dev = torch.device("cuda", rank % gpus)
    loader = graphshard.Loader(registry=registry, split="train", num_neighbors=[10, 5],
                               batch_size=32, shuffle=True, device=dev, output="pyg")
    md = loader.metadata
    torch.manual_seed(1)
    model = DistributedDataParallel(
        GraphSAGE(md["feat_dim"], 32, num_layers=2, out_channels=md["num_classes"]).to(dev),
        device_ids=[dev.index])
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    steps = 0
    for b in loader:
        out = model(b.x.float(), b.edge_index)[:b.batch_size]
        loss = F.cross_entropy(out, b.y[:b.batch_size])
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    seeds = torch.cat([ids for ids in loader.seed_ids().values()]).cpu()
    weights = torch.cat([p.detach().flatten().cpu() for p in model.parameters()])
    torch.save({"seeds": seeds, "weights": weights, "steps": steps},
               os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def check_ddp(registry, env):
    import torch.multiprocessing as mp
    gpus = torch.cuda.device_count()
    how = "2 GPUs, NCCL" if gpus >= 2 else "2 ranks on 1 GPU, gloo (a stand-in: one GPU here)"
    port = t.free_port()
    mp.spawn(ddp_rank, args=(2, registry, port, env.work), nprocs=2, join=True)
    r = [torch.load(os.path.join(env.work, f"rank{k}.pt")) for k in range(2)]
    a, b = set(r[0]["seeds"].tolist()), set(r[1]["seeds"].tolist())
    train_total = sum(len(v) for v in graphshard.Loader(
        registry=registry, split="train", output="plain").seed_ids().values())
    if a & b or len(a | b) != train_total:
        t.fail(f"DDP ranks' seeds: {len(a & b)} shared, {len(a | b)} of {train_total} covered")
    if r[0]["steps"] != r[1]["steps"]:
        t.fail(f"DDP ranks took {r[0]['steps']} and {r[1]['steps']} steps")
    if not torch.equal(r[0]["weights"], r[1]["weights"]):
        t.fail("DDP ranks ended with different weights")
    t.note(f"DDP ({how}): {r[0]['steps']} steps per rank, disjoint seeds ({len(a)} + {len(b)}), "
           "equal weights")


def main():
    need_stack()
    env = t.Env()
    try:
        registry, _ = env.start_servers(env.partition_cora(2))
        check_homogeneous(registry)
        check_bipartite_form(registry, env.src)
        check_padded(registry, env.src)
        check_ddp(registry, env)
        check_example(registry, env)
        check_hetero(env)
        check_link(env)
    finally:
        env.cleanup()
    t.note("ok")


if __name__ == "__main__":
    main()
