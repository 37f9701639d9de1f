#!/usr/bin/env python3
"""A PyG user's training loop, without PyG: a pure-PyTorch GraphSAGE (mean aggregation, as
PyG's SAGEConv) trained through graphshard.Loader in 2 processes with torch.distributed (gloo,
DistributedDataParallel) on Cora served by 2 real servers, with the settings of the C++
trainer's end-to-end test (tests/e2e/launch_cora_test.sh: fanouts 10,5, batch 256, hidden 64,
Adam lr 0.01, weight decay 5e-4, dropout 0.5, 40 epochs, seed 1) must reach its threshold,
test accuracy >= 0.75 (sampled evaluation over the test split, every seed once, summed over
ranks); both ranks run the same number of steps and end with the same weights.
Usage: loader_cora_sage_test.py BIN_DIR SOURCE_DIR (PYTHONPATH=<build>/python)."""
import hashlib
import json
import os
import subprocess
import sys

MIN_TEST_ACC = 0.75  # tests/e2e/launch_cora_test.sh


def worker(registry):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    import graphshard

    torch.set_num_threads(1)
    torch.manual_seed(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    class Sage(torch.nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.lin_l = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
            self.lin_r = torch.nn.ModuleList(
                torch.nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:]))

        def forward(self, x, edge_index):
            src, dst = edge_index[0], edge_index[1]
            deg = torch.bincount(dst, minlength=x.shape[0]).clamp(min=1).unsqueeze(1)
            for i, (l, r) in enumerate(zip(self.lin_l, self.lin_r)):
                mean = torch.zeros_like(x).index_add_(0, dst, x[src]) / deg
                x = l(mean) + r(x)
                if i + 1 < len(self.lin_l):
                    x = F.dropout(F.relu(x), p=0.5, training=self.training)
            return x

    train = graphshard.Loader(registry=registry, split="train", num_neighbors=[10, 5],
                              batch_size=256, seed=1, epoch=1)
    md = train.metadata
    model = torch.nn.parallel.DistributedDataParallel(
        Sage([md["feat_dim"], 64, md["num_classes"]]))
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    steps = 0
    for _ in range(40):
        model.train()
        for batch in train:
            opt.zero_grad()
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            F.cross_entropy(out, batch.y[:batch.batch_size]).backward()
            opt.step()
            steps += 1

    model.eval()
    counts = torch.zeros(2, dtype=torch.float64)
    test = graphshard.Loader(registry=registry, split="test", num_neighbors=[10, 5],
                             batch_size=256, seed=1)
    with torch.no_grad():
        for batch in test:
            pred = model(batch.x, batch.edge_index)[:batch.batch_size].argmax(1)
            counts += torch.tensor([(pred == batch.y[:batch.batch_size]).sum().item(),
                                    batch.batch_size], dtype=torch.float64)
    dist.all_reduce(counts)
    weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                      for p in model.parameters())).hexdigest()[:16]
    print(json.dumps({"rank": rank, "world": world, "steps": steps, "train_steps": len(train),
                      "test_seeds": int(counts[1]), "test_acc": float(counts[0] / counts[1]),
                      "weights": weights}), flush=True)
    dist.destroy_process_group()


def main():
    import gs_testlib as t
    env = t.Env()
    try:
        partition = env.partition_cora()
        registry, _ = env.start_servers(partition)
        port = t.free_port()
        procs = []
        for rank in range(2):
            e = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            procs.append(subprocess.Popen([sys.executable, __file__, "--worker", registry], env=e,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
        results = [json.loads(out.strip().splitlines()[-1])
                   for out in t.collect_ranks(procs, 400)]
        for r in results:
            t.note(json.dumps(r))
        r0, r1 = results
        if r0["steps"] != r1["steps"] or r0["steps"] != 40 * r0["train_steps"]:
            t.fail(f"steps differ: {r0['steps']} vs {r1['steps']}")
        if r0["weights"] != r1["weights"]:
            t.fail(f"weights differ: {r0['weights']} vs {r1['weights']}")
        if r0["test_seeds"] != 1000:
            t.fail(f"evaluated {r0['test_seeds']} test seeds, Cora has 1000")
        if r0["test_acc"] < MIN_TEST_ACC:
            t.fail(f"test_acc {r0['test_acc']:.4f} < {MIN_TEST_ACC}")
        t.note(f"ok: test_acc {r0['test_acc']:.4f} >= {MIN_TEST_ACC}")
    finally:
        env.cleanup()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main()
