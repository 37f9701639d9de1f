#!/usr/bin/env python3
"""PyG's GraphSAGE on graphshard: graphshard.Loader in place of torch_geometric's NeighborLoader.

A copy-and-adapt example for PyG users (docs/PYTHON.md). Start the partition servers first
(deploy/graphshard-launch, or one `graphshard-server --partition P --part k --registry R` per
part), then:

    PYTHONPATH=build/python python3 examples/pyg_products_train.py --registry R --epochs 3

One process, one GPU (--device cuda) or the CPU. Each epoch prints one JSON line: epoch time,
data wait (the time the training loop waited for its next batch), loss, seeds/s; the last line
is a summary. For several GPUs run one process per GPU with torchrun (it sets RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT):

    PYTHONPATH=build/python torchrun --nproc-per-node 2 examples/pyg_products_train.py --registry R

Each rank then takes GPU LOCAL_RANK, joins torch.distributed (NCCL; gloo where the host has
fewer GPUs than ranks) before the loader, and wraps the model in DistributedDataParallel: the
loader gives each rank its share of the seeds, read from the servers on its own host, and the
same number of steps. Rank 0 prints the epoch lines; every rank prints its summary (with a
digest of its weights: equal on every rank), and --eval sums the ranks' test counts.

What changes against the NeighborLoader version:
    loader = NeighborLoader(data, input_nodes=data.train_mask, num_neighbors=[15, 10, 5],
                            batch_size=1024, shuffle=True, num_workers=12)
becomes
    loader = graphshard.Loader(registry=R, split="train", num_neighbors=[15, 10, 5],
                               batch_size=1024, device=device)
and the rest (batch.x, batch.edge_index, batch.y[:batch.batch_size]) stays. The batches carry
PyG's num_sampled_nodes / num_sampled_edges in hop order, so PyG's trim_to_layer works as with
NeighborLoader (--trim on, the default), --precision bf16 is plain torch.autocast and tf32
PyTorch's allow_tf32, and --feature-store auto keeps every feature row on the GPU when it has
room for them (batch.x gathered there; the loop reads only batch.y[:batch.batch_size]): the
same work as graphshard-trainer's defaults (--trim on, --precision auto, --feature-store auto). With device=...,
batches arrive on the GPU already (copied ahead on a side stream); without it, call
batch.to(device) as usual. --compile wraps the model in torch.compile(dynamic=True) (the first
epoch pays for compiling; later ones ran up to 14% faster on the GPU machine, docs/PYTHON.md).
--cuda-graphs pads every batch to fixed shapes (graphshard.PadToStatic as the loader's
transform, in its read-ahead thread) and compiles the model and loss with
torch.compile(mode="reduce-overhead"): each step replays CUDA graphs instead of launching every
kernel from Python (the same seed outputs and loss; the first batches pay for the captures).
"""
import argparse
import hashlib
import json
import os
import time

import torch
import torch.nn.functional as F

import graphshard

try:
    from torch_geometric.nn import GraphSAGE
except ImportError as e:  # pragma: no cover
    raise SystemExit(f"this example needs torch_geometric ({e})")


def bipartite_forward(model, x, edge_index, nodes_per_hop, edges_per_hop):
    """PyG's GraphSAGE (a BasicGNN) layer by layer in the bipartite form of PyG's mini-batch
    examples: conv l reads the nodes within L - l hops and computes only those within
    L - l - 1, over the edges into them. The batch's nodes and edges come in hop order (seeds
    first, hop-1 edges first), so each set is a prefix. Same weights, same function as
    model(x, edge_index) on the seeds' rows; act, norm and dropout as BasicGNN applies them."""
    num_layers = len(model.convs)
    nodes, edges = [0], [0]
    for n in nodes_per_hop:
        nodes.append(nodes[-1] + int(n))
    for e in edges_per_hop:
        edges.append(edges[-1] + int(e))
    if len(nodes) != num_layers + 2 or len(edges) != num_layers + 1:
        raise ValueError(f"a batch of {len(nodes) - 1} node hops and {len(edges) - 1} edge hops "
                         f"for a {num_layers}-layer model")
    for i, conv in enumerate(model.convs):
        n_src, n_dst = nodes[num_layers - i + 1], nodes[num_layers - i]
        x = conv((x[:n_src], x[:n_dst]), edge_index[:, :edges[num_layers - i]],
                 size=(n_src, n_dst))
        if i < num_layers - 1:
            if model.act is not None and model.act_first:
                x = model.act(x)
            if model.norms is not None:
                x = model.norms[i](x)
            if model.act is not None and not model.act_first:
                x = model.act(x)
            x = model.dropout(x)
    return x


def profile(loader, train_step, steps, sync, trace=None):
    """`steps` training steps under torch.profiler: per step, the wall time, the main thread's
    CPU time and the GPU's kernel time (the sum over kernels: below the wall time, the GPU
    waited for the CPU), and the ops with the most CPU time of their own. The profiler's own
    overhead is in the wall and CPU times; the kernel time is the GPU's."""
    from torch.profiler import ProfilerActivity, profile as torch_profile
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    done = 0
    sync()
    with torch_profile(activities=activities) as prof:
        t0, c0 = time.perf_counter(), time.thread_time()
        for batch in loader:
            if batch is None:
                continue
            train_step(batch)
            done += 1
            if done == steps:
                break
        sync()
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    if trace:
        prof.export_chrome_trace(trace)
    events = prof.key_averages()
    kernel_us = sum(e.self_device_time_total for e in events
                    if e.device_type is not None and "CUDA" in str(e.device_type))
    top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:15]
    return {"profile_steps": done, "wall_ms_per_step": round(1e3 * wall / max(done, 1), 3),
            "main_thread_cpu_ms_per_step": round(1e3 * cpu / max(done, 1), 3),
            "gpu_kernel_ms_per_step": round(kernel_us / 1e3 / max(done, 1), 3),
            "top_cpu_ops": [[e.key, round(e.self_cpu_time_total / 1e3 / max(done, 1), 3),
                             e.count // max(done, 1)] for e in top]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--registry", help="the servers' --registry folder")
    where.add_argument("--servers", help="host:port,... (index = part)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--fanouts", default="15,10,5")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--prefetch", type=int, default=4, help="batches copied to the device ahead")
    ap.add_argument("--feature-dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--eval", action="store_true", help="test accuracy after the last epoch")
    ap.add_argument("--trim", default="on", choices=["on", "off", "bipartite"],
                    help="on: PyG's trim_to_layer (layer l reads only the nodes within L - l "
                         "hops, from the batch's num_sampled_nodes / num_sampled_edges per "
                         "hop, and computes all of them); bipartite: the model's convs called "
                         "one by one on (x, x[:n_dst]) with size=(n_src, n_dst), the form of "
                         "PyG's mini-batch examples: layer l computes only the nodes layer l + 1 "
                         "reads (as graphshard-trainer's trimming); off: every node, every layer")
    ap.add_argument("--precision", default="auto", choices=["auto", "fp32", "tf32", "bf16"],
                    help="matmuls: bf16 = torch.autocast(bfloat16) over the forward pass "
                         "(weights, loss, Adam in float32); tf32 = TF32 tensor cores; auto = "
                         "tf32 on cuda, fp32 on cpu (as graphshard-trainer)")
    ap.add_argument("--edge-index", default="coo", choices=["coo", "csr"],
                    help="coo: batch.edge_index as it comes; csr: sorted by destination (a stable "
                         "sort keeps the hops in order) and wrapped in PyG's EdgeIndex "
                         "(sort_order='col'), so that SAGEConv aggregates with a sparse matmul")
    ap.add_argument("--feature-store", default="auto", choices=["auto", "server", "device"],
                    help="graphshard.Loader's feature_store: rows in each batch (server), on "
                         "the device (device), or on a GPU with room for them (auto)")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile(model, dynamic=True), as PyG's torch.compile guide "
                         "shows: fewer kernel launches and less Python per step; the first "
                         "batches pay for the compilation")
    ap.add_argument("--cuda-graphs", action="store_true",
                    help="pad batches to fixed shapes (graphshard.PadToStatic, the loader's "
                         "transform) and compile model + loss with torch.compile(mode="
                         "'reduce-overhead'): CUDA graphs replayed per step (needs --device cuda, "
                         "--edge-index coo)")
    ap.add_argument("--pad-headroom", type=float, default=0.05,
                    help="with --cuda-graphs: PadToStatic's headroom (each hop's capacity this "
                         "fraction above the count that set it: fewer shapes, more padding)")
    ap.add_argument("--fused-adam", action="store_true",
                    help="torch.optim.Adam(fused=True): one kernel for the optimizer step")
    ap.add_argument("--profile-steps", type=int, default=0,
                    help="after the timed epochs, N more steps under torch.profiler: prints one "
                         "JSON line with the wall, main-thread CPU and GPU kernel time per step "
                         "and the ops that took the most CPU (where a step's time goes)")
    ap.add_argument("--profile-trace", help="with --profile-steps: also write the profiler's "
                    "Chrome trace (chrome://tracing, Perfetto) to this file")
    args = ap.parse_args()
    if args.cuda_graphs and (args.edge_index != "coo" or args.compile):
        ap.error("--cuda-graphs: give it without --compile (it compiles) and with --edge-index coo")
    if args.cuda_graphs and not str(args.device).startswith("cuda"):
        ap.error(f"--cuda-graphs needs a CUDA device (--device {args.device})")

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank, dist = 0, None
    if world > 1:  # torchrun: one process per GPU
        if args.cuda_graphs or args.trim == "bipartite":
            ap.error("with several ranks, --cuda-graphs and --trim bipartite are not supported "
                     "(DistributedDataParallel's gradient hooks need its own forward, uncaptured)")
        import torch.distributed as dist
        local = int(os.environ.get("LOCAL_RANK", "0"))
        backend = "gloo"
        if device.type == "cuda":
            gpus = torch.cuda.device_count()
            device = torch.device("cuda", local % gpus)
            torch.cuda.set_device(device)
            if gpus >= int(os.environ.get("LOCAL_WORLD_SIZE", world)):
                backend = "nccl"  # one GPU per rank; NCCL refuses two ranks on one GPU
        dist.init_process_group(backend)
        rank = dist.get_rank()
    fanouts = [int(f) for f in args.fanouts.split(",")]
    where = dict(registry=args.registry) if args.registry else dict(servers=args.servers.split(","))
    loader = graphshard.Loader(**where, split="train", num_neighbors=fanouts,
                               batch_size=args.batch_size, shuffle=True, seed=args.seed,
                               feature_dtype=args.feature_dtype, device=device,
                               prefetch=args.prefetch, feature_store=args.feature_store,
                               transform=graphshard.PadToStatic(args.pad_headroom)
                               if args.cuda_graphs else None)
    md = loader.metadata
    model = GraphSAGE(md["feat_dim"], args.hidden, num_layers=len(fanouts),
                      out_channels=md["num_classes"], dropout=args.dropout).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr,
                           **(dict(fused=True) if args.fused_adam else {}))
    net = model  # the GraphSAGE itself (bipartite_forward reads its convs)
    if dist is not None:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device] if device.type == "cuda" else None)
    if args.compile:
        model = torch.compile(model, dynamic=True)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    precision = args.precision
    if precision == "auto":
        precision = "tf32" if device.type == "cuda" else "fp32"
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"

    def forward(batch, x, module=None):
        """The model over one batch (the seeds' rows first), trimmed and autocast by flag."""
        return forward_of(x, batch.edge_index, tuple(batch.num_sampled_nodes),
                          tuple(batch.num_sampled_edges), batch.batch_size, module)

    def forward_of(x, edge_index, nodes, edges, seeds, module=None):
        """forward's work from tensors and ints (what --cuda-graphs compiles); module: another
        than the training one (evaluation runs the bare GraphSAGE: no DDP collectives, since
        ranks may have different numbers of test batches)."""
        module = model if module is None else module
        if args.trim == "bipartite":
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
                out = bipartite_forward(net, x, edge_index, nodes, edges)[:seeds]
            return out.float()
        hops = {}
        if args.trim == "on":
            hops = dict(num_sampled_nodes_per_hop=list(nodes),
                        num_sampled_edges_per_hop=list(edges))
        if args.edge_index == "csr":
            from torch_geometric import EdgeIndex
            order = torch.argsort(edge_index[1], stable=True)
            edge_index = EdgeIndex(edge_index[:, order], sparse_size=(x.size(0), x.size(0)),
                                   sort_order="col")
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            out = module(x, edge_index, **hops)[:seeds]
        return out.float()

    def loss_of(x, edge_index, y, nodes, edges, seeds):
        """Cross-entropy over the seeds (padding seeds' label -100: ignored)."""
        return F.cross_entropy(forward_of(x, edge_index, nodes, edges, seeds), y[:seeds])

    if args.cuda_graphs:  # one shape per set of capacities: one capture each (PadToStatic.grew)
        loss_of = torch.compile(loss_of, mode="reduce-overhead", dynamic=False)

    def train_step(batch):
        """One optimizer step; the loss stays on the device (no sync per step)."""
        if args.cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()  # last step's graph outputs are done
        opt.zero_grad()
        x = batch.x.float()  # 16-bit transport widens here, on the device
        loss = loss_of(x, batch.edge_index, batch.y, tuple(batch.num_sampled_nodes),
                       tuple(batch.num_sampled_edges), batch.batch_size)
        loss.backward()
        opt.step()
        return loss.detach()

    def seeds_of(batch):
        return getattr(batch, "num_seeds", batch.batch_size)  # PadToStatic: the real seeds

    epochs = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        sync()
        t0 = time.perf_counter()
        c0, r0, b0 = time.thread_time(), loader.read_ahead_cpu_s, loader.build_cpu_s
        wait = 0.0
        loss_sum = torch.zeros((), device=device)
        seeds = 0
        it = iter(loader)
        while True:
            w0 = time.perf_counter()
            batch = next(it, None)
            wait += time.perf_counter() - w0
            if batch is None:
                break
            loss_sum += train_step(batch) * seeds_of(batch)
            seeds += seeds_of(batch)
        sync()
        elapsed = time.perf_counter() - t0
        main_cpu = time.thread_time() - c0
        rec = {"epoch": epoch, "time_s": round(elapsed, 4), "data_wait_s": round(wait, 4),
               "data_wait_fraction": round(wait / elapsed, 4), "steps": len(loader),
               "main_thread_cpu_s": round(main_cpu, 4),
               "read_ahead_cpu_s": round(loader.read_ahead_cpu_s - r0, 4),
               "build_cpu_s": round(loader.build_cpu_s - b0, 4),
               "loss": round(float(loss_sum) / max(seeds, 1), 5),
               "seeds_per_s": round(seeds / elapsed, 1)}
        epochs.append(rec)
        if rank == 0:
            print(json.dumps(rec), flush=True)

    if args.profile_steps > 0:
        print(json.dumps(profile(loader, train_step, args.profile_steps, sync,
                                 args.profile_trace)), flush=True)

    digest = hashlib.sha256(b"".join(p.detach().float().cpu().numpy().tobytes()
                                     for p in net.parameters())).hexdigest()[:16]
    summary = {"name": "pyg_products_train", "rank": rank, "world_size": world,
               "weights": digest, "device": str(device), "trim": args.trim,
               "cuda_graphs": args.cuda_graphs,
               "precision": precision, "feature_store": loader.feature_store,
               "cuda_host_registered": loader.cuda_host_registered,
               "epochs": len(epochs), "last_epoch_time_s": epochs[-1]["time_s"],
               "last_data_wait_s": epochs[-1]["data_wait_s"],
               "last_data_wait_fraction": epochs[-1]["data_wait_fraction"]}
    if loader.transform is not None:
        summary["shapes"] = loader.transform.grew + 1  # captures made (one per shape)
    if args.eval:
        model.eval()
        test = graphshard.Loader(**where, split="test", num_neighbors=fanouts,
                                 batch_size=args.batch_size, seed=args.seed, device=device)
        correct = total = 0
        with torch.no_grad():
            for batch in test:
                pred = forward(batch, batch.x.float(), net).argmax(1)
                correct += int((pred == batch.y[:batch.batch_size]).sum())
                total += batch.batch_size
        if dist is not None:  # each rank evaluated its share of the test seeds
            counts = torch.tensor([correct, total], dtype=torch.float64, device=device)
            dist.all_reduce(counts)
            correct, total = int(counts[0]), int(counts[1])
        summary["test_acc"] = round(correct / max(total, 1), 4)
        summary["test_seeds"] = total
    print(json.dumps(summary), flush=True)
    if dist is not None:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
