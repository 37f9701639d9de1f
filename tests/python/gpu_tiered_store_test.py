"""GPU machine only (label gpu): the loader's tiered store on CUDA (page-locked host rows, the
copy of each batch's other rows, the device tier's gather) gives the same x as every row on the
GPU, on Cora (homogeneous) at 10% of the table, with hits in both tiers."""
import sys

import gs_testlib as t
import graphshard
import torch


def batches(registry, **kw):
    loader = graphshard.Loader(registry=registry, split="train", output="plain",
                               feature_store="device", device="cuda", num_neighbors=[10, 5],
                               batch_size=64, seed=3, **kw)
    got = {(b.part, b.epoch, b.batch_index): b.x.clone() for b in loader}
    return loader, got


def main():
    if not torch.cuda.is_available():
        t.fail("no CUDA device: this test runs on the GPU machine")
    env = t.Env()
    try:
        registry, _ = env.start_servers(env.partition_cora())
        full, want = batches(registry)
        md = full.metadata["node_types"][0]
        budget = 0.1 * md["num_nodes"] * md["feat_dim"] * 4 / 2**20
        tiered, got = batches(registry, device_cache_mib=budget)
        if set(got) != set(want) or not want:
            t.fail(f"batches {sorted(got)} vs {sorted(want)}")
        for key, x in want.items():
            if got[key].device.type != "cuda" or not torch.equal(got[key], x):
                t.fail(f"batch {key}: x differs from every row on the GPU")
        tiers = tiered.feature_tiers
        if not 0 < tiers["device_hit_rate"] < 1:
            t.fail(f"feature_tiers {tiers}: expected hits in both tiers")
        t.note(f"cuda tiered store at 10%: {len(got)} batches equal every row on the GPU; "
               f"device hit rate {tiers['device_hit_rate']:.3f}, {tiers['host_mib']:.2f} MiB "
               f"from pinned host memory")
    finally:
        env.cleanup()
    t.note("ok")


if __name__ == "__main__":
    sys.exit(main())
