#!/usr/bin/env bash
# The tiered feature store on a GPU, bit for bit (run on the GPU machine; CI has no GPU): Cora
# and IMDB, 2 servers + 1 GPU trainer (--deterministic: bitwise-reproducible CUDA kernels),
# trained with rows in every batch, then with a 1 MiB device tier and the host tier (read by
# the GPU in place, through the gather kernel), then with --host-tier none (the remote tier,
# rows of the batches before copied on the GPU: --reuse-rows, the default), and the same with
# --no-reuse-rows (every remote row fetched). Prints one JSON line per graph: the four weights
# fingerprints, whether they are equal (and the remote run copied some rows), and the tiered
# runs' feature_tiers. Where the machine has 2 GPUs, also 2 trainers (one per GPU)
# with rows in every batch against 2 trainers with --device-tier shared (the table split over
# the two GPUs, each reading the other's half over peer access), with the shares made by CUDA's
# VMM API (the default) and through CUDA IPC (GRAPHSHARD_SHARED_TIER_EXPORT=ipc): a second line
# per graph.
# Exit 1 when a fingerprint differs or the remote run copied no row. SHARED_ONLY=1: only the 2-GPU pair.
#
#   source .devdeps/use-deps.sh .devdeps && BIN=build-gpu/bin bash tests/bench/tiered_store_gpu_check.sh
set -uo pipefail
BIN=${BIN:-build-gpu/bin}
WORK=$(mktemp -d /tmp/gs-tiered-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
status=0
run() {  # run NAME PARTITION ARGS...: the last stdout line (the JSON summary); TRAINERS (1)
  local name=$1 part=$2
  shift 2
  timeout 300 deploy/graphshard-launch --partition "$part" --servers 2 --trainers "${TRAINERS:-1}" \
    --bin-dir "$BIN" --registry "$WORK/reg-$name" --server-wait-s 60 -- \
    --device cuda --deterministic --seed 1 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" ||
    { tail -5 "$WORK/$name.err" >&2; echo '{}'; return; }
  grep -e "feature store (" -e "training batches sampled" "$WORK/$name.err" >&2
  tail -n 1 "$WORK/$name.out"
}
check() {  # check GRAPH PARTITION ARGS...
  local graph=$1 part=$2 a b c d
  shift 2
  if [[ ${SHARED_ONLY:-0} != 1 ]]; then
  a=$(run "$graph-server" "$part" "$@" --feature-store server)
  b=$(run "$graph-host" "$part" "$@" --feature-store device --device-cache-mib 1)
  c=$(run "$graph-remote" "$part" "$@" --feature-store device --device-cache-mib 1 --host-tier none)
  d=$(run "$graph-remote-fetched" "$part" "$@" --feature-store device --device-cache-mib 1 \
    --host-tier none --no-reuse-rows)
  python3 - "$graph" "$a" "$b" "$c" "$d" <<'PY' || status=1
import json, sys
graph, *runs = sys.argv[1:]
a, b, c, d = (json.loads(r) for r in runs)
fps = [r.get("weights_fingerprint") for r in (a, b, c, d)]
copied = (c.get("feature_tiers") or {}).get("reused_rate", 0)
same = fps[0] is not None and len(set(fps)) == 1 and copied > 0
print(json.dumps({"name": f"tiered_store_gpu_bitwise_{graph}", "value": same,
                  "fingerprints": fps, "host_tiers": b.get("feature_tiers"),
                  "remote_tiers": c.get("feature_tiers"),
                  "remote_fetched_tiers": d.get("feature_tiers")}))
sys.exit(0 if same else 1)
PY
  fi
  (($(nvidia-smi -L 2>/dev/null | grep -c '^GPU') >= 2)) || return 0
  a=$(TRAINERS=2 run "$graph-server2" "$part" "$@" --feature-store server)
  b=$(TRAINERS=2 run "$graph-shared2" "$part" "$@" --feature-store device --device-tier shared)
  grep "device tier shared\|peer" "$WORK/$graph-shared2.err" | head -4 >&2
  # The same with the shares through CUDA IPC handles instead of the VMM API (the default).
  c=$(GRAPHSHARD_SHARED_TIER_EXPORT=ipc TRAINERS=2 run "$graph-shared2ipc" "$part" "$@" \
    --feature-store device --device-tier shared)
  grep "device tier shared" "$WORK/$graph-shared2ipc.err" | head -2 >&2
  python3 - "$graph" "$a" "$b" "$c" <<'PY' || status=1
import json, sys
graph, *runs = sys.argv[1:]
a, b, c = (json.loads(r) for r in runs)
fps = [r.get("weights_fingerprint") for r in (a, b, c)]
tiers = b.get("feature_tiers") or {}
same = (fps[0] is not None and len(set(fps)) == 1 and tiers.get("peer_hit_rate", 0) > 0
        and (c.get("feature_tiers") or {}).get("peer_hit_rate", 0) > 0)
print(json.dumps({"name": f"tiered_store_gpu_shared_2gpu_bitwise_{graph}", "value": same,
                  "fingerprints": fps, "fingerprints_are": ["server", "shared (vmm)", "shared (ipc)"],
                  "shared_tiers": tiers}))
sys.exit(0 if same else 1)
PY
}
"$BIN/graphshard-partition" partition --input tests/data/cora --parts 2 --method random \
  --undirected --seed 1 --out "$WORK/cora2" >/dev/null || exit 1
"$BIN/graphshard-partition" partition --input tests/data/imdb --parts 2 --method random \
  --seed 1 --out "$WORK/imdb2" >/dev/null || exit 1
check cora "$WORK/cora2" --model sage --epochs 8 --eval-every 8
check imdb "$WORK/imdb2" --model sage --epochs 3 --eval-every 3 --hidden 32 --fanouts 10,10 \
  --batch-size 64 --lr 0.005 --weight-decay 1e-3
exit $status
