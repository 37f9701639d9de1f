#!/usr/bin/env python3
"""PyG's own NeighborLoader on the products-shaped graph: the baseline the Python loader is
measured against (tests/bench/python_loader_bench.sh runs it in the same call).

The graph of tests/bench/gen_products_like.py (x.npy, y.npy, edge_index.npy with both
directions, train_idx.npy) loaded into one torch_geometric.data.Data, then
NeighborLoader(num_neighbors=[15, 10, 5], batch_size=1024, shuffle=True, num_workers=WORKERS)
feeding PyG's GraphSAGE (3 x 256, dropout 0.5, Adam 0.003) on the GPU, trimmed with PyG's
trim_to_layer, TF32: what a PyG user runs today. One JSON line per epoch (time, data wait) and
a summary; on failure (e.g. neither pyg-lib nor torch-sparse for the sampler) one JSON line
with "error" and exit status 1.

Usage: pyg_neighbor_loader.py --graph DIR [--epochs 2] [--workers 12] [--device cuda]
"""
import argparse
import json
import os.path as osp
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", required=True, help="gen_products_like.py's output folder")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=12)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    try:
        import numpy as np
        import torch
        import torch.nn.functional as F
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader
        from torch_geometric.nn import GraphSAGE
    except ImportError as e:
        print(json.dumps({"name": "pyg_neighbor_loader", "error": f"import: {e}"}), flush=True)
        return 1

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    t0 = time.perf_counter()
    load = lambda name: torch.from_numpy(np.load(osp.join(args.graph, name + ".npy")))
    data = Data(x=load("x"), y=load("y"), edge_index=load("edge_index"))
    train_idx = load("train_idx")
    try:
        loader = NeighborLoader(data, input_nodes=train_idx, num_neighbors=[15, 10, 5],
                                batch_size=1024, shuffle=True, num_workers=args.workers,
                                persistent_workers=args.workers > 0)
    except ImportError as e:
        print(json.dumps({"name": "pyg_neighbor_loader", "error": f"NeighborLoader: {e}"}),
              flush=True)
        return 1
    setup_s = time.perf_counter() - t0
    num_classes = int(data.y.max()) + 1
    model = GraphSAGE(data.num_features, 256, num_layers=3, out_channels=num_classes,
                      dropout=0.5).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    torch.backends.cuda.matmul.allow_tf32 = device.type == "cuda"
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    epochs = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        sync()
        start = time.perf_counter()
        wait = 0.0
        it = iter(loader)
        steps = 0
        while True:
            w0 = time.perf_counter()
            batch = next(it, None)
            if batch is not None:
                batch = batch.to(device, non_blocking=True)
            wait += time.perf_counter() - w0
            if batch is None:
                break
            opt.zero_grad()
            out = model(batch.x, batch.edge_index,
                        num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                        num_sampled_edges_per_hop=batch.num_sampled_edges)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            opt.step()
            steps += 1
        sync()
        elapsed = time.perf_counter() - start
        rec = {"epoch": epoch, "time_s": round(elapsed, 4), "data_wait_s": round(wait, 4),
               "steps": steps}
        epochs.append(rec)
        print(json.dumps(rec), flush=True)
    print(json.dumps({"name": "pyg_neighbor_loader", "workers": args.workers,
                      "setup_s": round(setup_s, 2), "epochs": len(epochs),
                      "last_epoch_time_s": epochs[-1]["time_s"],
                      "last_data_wait_s": epochs[-1]["data_wait_s"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
