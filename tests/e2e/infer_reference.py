#!/usr/bin/env python3
"""Checks graphshard-trainer --infer's outputs against a direct full-graph computation.

usage: infer_reference.py PARTITION_DIR OUT_DIR MODEL [--normalize] [--tol 1e-5]

Reads the partition folder (features, in-edges of every part) and the weights the inference
wrote (OUT_DIR/model/*.npy), computes GraphSAGE (mean, root weight) or GCN (self loops,
symmetric normalisation over the whole graph's degrees) over the whole graph in float64 with
numpy, and compares with OUT_DIR/part_*/{orig_id,logits,embeddings,predictions}.npy: every node
exactly once, logits and the last hidden layer within TOL x max(1, |reference|), predictions the
argmax of the logits. As a control, the same comparison with one weight perturbed by 1e-3 must
fail. Prints one JSON line; exit status 1 on any mismatch.
"""
import glob
import json
import os
import sys

import numpy as np


def load_graph(part_dir, normalize):
    manifest = json.load(open(os.path.join(part_dir, "graphshard.json")))
    (ntype,) = manifest["node_types"]
    (etype,) = manifest["edge_types"]
    offsets = ntype["part_offsets"]
    feats, origs, labels, srcs, dsts = [], [], [], [], []
    for p in range(manifest["num_parts"]):
        base = os.path.join(part_dir, f"part_{p}")
        node = os.path.join(base, "nodes", ntype["name"])
        feats.append(np.load(os.path.join(node, "feat.npy")).astype(np.float64))
        origs.append(np.load(os.path.join(node, "orig_id.npy")))
        labels.append(np.load(os.path.join(node, "label.npy")))
        edges = os.path.join(base, "edges", etype["name"])
        indptr = np.load(os.path.join(edges, "indptr.npy"))
        indices = np.load(os.path.join(edges, "indices.npy"))
        dsts.append(offsets[p] + np.repeat(np.arange(len(indptr) - 1), np.diff(indptr)))
        srcs.append(indices)
    x = np.concatenate(feats)
    if normalize:
        x = x / np.maximum(x.sum(1, keepdims=True), 1)
    return x, np.concatenate(origs), np.concatenate(srcs), np.concatenate(dsts)


def sage(x, src, dst, w):
    n = x.shape[0]
    layers = len([k for k in w if k.endswith("lin_l.weight")])
    deg = np.bincount(dst, minlength=n).astype(np.float64)
    h, hidden = x, None
    for l in range(layers):
        agg = np.zeros((n, h.shape[1]))
        np.add.at(agg, dst, h[src])
        agg /= np.maximum(deg, 1)[:, None]
        h = (agg @ w[f"convs.{l}.lin_l.weight"].T + w[f"convs.{l}.lin_l.bias"] +
             h @ w[f"convs.{l}.lin_r.weight"].T)
        if l < layers - 1:
            h = np.maximum(h, 0)
            hidden = h
    return h, hidden


def gcn(x, src, dst, w):
    n = x.shape[0]
    layers = len([k for k in w if k.endswith("lin.weight")])
    deg = 1 + np.bincount(dst, minlength=n).astype(np.float64)
    norm = deg[src] ** -0.5 * deg[dst] ** -0.5
    h, hidden = x, None
    for l in range(layers):
        hw = h @ w[f"convs.{l}.lin.weight"].T
        out = hw / deg[:, None]  # the self loop: deg_i^-1/2 * deg_i^-1/2
        np.add.at(out, dst, hw[src] * norm[:, None])
        h = out + w[f"convs.{l}.bias"]
        if l < layers - 1:
            h = np.maximum(h, 0)
            hidden = h
    return h, hidden


def compare(out_dir, orig, logits_ref, hidden_ref, tol):
    row_of = {int(o): i for i, o in enumerate(orig)}
    seen = np.zeros(len(orig), dtype=np.int64)
    worst = {"logits": 0.0, "embeddings": 0.0}
    problems = []
    dirs = []
    for part in sorted(glob.glob(os.path.join(out_dir, "part_*"))):
        dirs += sorted(glob.glob(os.path.join(part, "chunk_*"))) or [part]
    for d in dirs:
        ids = np.load(os.path.join(d, "orig_id.npy"))
        rows = np.array([row_of[int(i)] for i in ids], dtype=np.int64)
        seen[rows] += 1
        logits = np.load(os.path.join(d, "logits.npy"))
        if not np.array_equal(np.load(os.path.join(d, "predictions.npy")), logits.argmax(1)):
            problems.append(f"{d}: predictions are not the argmax of the logits")
        pairs = [("logits", logits, logits_ref)]
        if hidden_ref is not None:
            pairs.append(("embeddings", np.load(os.path.join(d, "embeddings.npy")), hidden_ref))
        for name, got, ref in pairs:
            want = ref[rows]
            if got.shape != want.shape:
                problems.append(f"{d}/{name}.npy: shape {got.shape}, expected {want.shape}")
                continue
            err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max())) if len(got) else 0.0
            worst[name] = max(worst[name], err)
            if err > tol:
                problems.append(f"{d}/{name}.npy: relative error {err:.3g} > {tol}")
    if not (seen == 1).all():
        problems.append(f"{int((seen == 0).sum())} nodes missing, {int((seen > 1).sum())} repeated")
    return worst, problems


def main():
    part_dir, out_dir, model = sys.argv[1:4]
    normalize = "--normalize" in sys.argv
    tol = float(sys.argv[sys.argv.index("--tol") + 1]) if "--tol" in sys.argv else 1e-5
    x, orig, src, dst = load_graph(part_dir, normalize)
    w = {os.path.basename(f)[:-4]: np.load(f).astype(np.float64)
         for f in glob.glob(os.path.join(out_dir, "model", "*.npy"))}
    forward = {"sage": sage, "gcn": gcn}[model]
    logits, hidden = forward(x, src, dst, w)
    worst, problems = compare(out_dir, orig, logits, hidden, tol)
    # Control: a perturbed weight must be noticed at this tolerance.
    first = sorted(k for k in w if k.endswith("weight"))[0]
    w[first] = w[first] + 1e-3
    _, control = compare(out_dir, orig, *forward(x, src, dst, w), tol)
    if not control:
        problems.append(f"the comparison did not notice {first} + 1e-3: it cannot fail")
    print(json.dumps({"model": model, "nodes": int(len(orig)), "max_rel_err_logits": worst["logits"],
                      "max_rel_err_embeddings": worst["embeddings"], "tol": tol,
                      "problems": problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
