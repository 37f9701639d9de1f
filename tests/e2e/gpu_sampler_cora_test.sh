#!/usr/bin/env bash
# --sampler gpu end to end on Cora, on a GPU (label gpu: the GPU machine only; CI has none):
# deploy/graphshard-launch with 2 servers and 1 GPU trainer, --deterministic, once with the
# servers sampling (--feature-store device: batches as ids, rows on the GPU) and once with the
# trainer sampling on its GPU (trainer/gpu_sampler.h), then with --sampler left at auto (the
# GPU: Cora's topology fits) and auto with the rows in the batches (the servers); then the GPU
# sampler with the topology in page-locked host memory (--sampler-topology host), and auto
# beside a device tier capped at part of the rows (the GPU, the topology on it); the gpu run
# keeps 3 batches ahead (--prefetch 3), the others auto's 2. The GPU
# sampler draws the servers' batches, so the weights must be the same bit for bit in every run,
# test_acc >= 0.75, and the trainer must say what it read, where, and which sampler auto chose.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer

partition_cora "$WORK/cora2"
declare -A FP=()
run_one() {  # run_one NAME TRAINER_FLAGS...: 2 servers + 1 trainer, fingerprint into FP[NAME]
  local name=$1 status=0 fp
  shift
  timeout 300 "$LAUNCH" --partition "$WORK/cora2" --servers 2 --trainers 1 --bin-dir "$BIN" \
    --registry "$WORK/registry_$name" --server-wait-s 60 -- --device cuda --model sage \
    --epochs 20 --eval-every 20 --seed 1 --deterministic \
    --metrics-file "$WORK/$name.metrics.jsonl" "$@" \
    >"$WORK/$name.stdout" 2>"$WORK/$name.stderr" || status=$?
  show "$WORK/$name.stdout"
  ((status == 0)) || { show "$WORK/$name.stderr"; fail "$name: graphshard-launch exited $status"; }
  expect_summary "$WORK/$name.stdout" 0.75 1
  fp=$(sed -n 's/^\[trainer 0\] rank 0 weights_fingerprint \([0-9a-fA-F]*\)$/\1/p' "$WORK/$name.stderr")
  [[ -n $fp ]] || fail "$name: no weights_fingerprint line"
  FP[$name]=$fp
}
note "servers sample"
run_one server --sampler server --feature-store device
note "the trainer samples on its GPU"
run_one gpu --sampler gpu --feature-store device --prefetch 3
note "--sampler auto (the default), rows on the GPU (--feature-store auto)"
run_one auto
note "--sampler auto with the rows in the batches"
run_one auto_rows --feature-store server
note "the trainer samples on its GPU, the topology in host memory"
run_one host --sampler gpu --sampler-topology host --feature-store device
note "--sampler auto beside a device tier of 4 MiB (Cora's rows: 14.8 MiB)"
run_one auto_capped --device-cache-mib 4
read_line="^\[trainer 0\] rank 0: --sampler gpu: 2708 nodes, 10556 in-edges read in"
for name in gpu auto host auto_capped; do
  grep -q "$read_line" "$WORK/$name.stderr" ||
    fail "$name: the trainer does not say it read Cora's 2708 nodes and 10556 in-edges"
done
grep -q "$read_line .* MiB of sources in page-locked host memory, read by cuda:0 over PCIe" \
  "$WORK/host.stderr" || fail "host: the trainer does not say the topology is in host memory"
# --prefetch auto keeps 2 GPU-sampled batches ahead (client::ResolvePrefetch); a number as given.
grep -q "$read_line .*; 3 batches made ahead (--prefetch 3)\$" "$WORK/gpu.stderr" ||
  fail "gpu: the trainer does not say it makes the 3 batches ahead that --prefetch 3 asks"
for name in auto host auto_capped; do
  grep -q "$read_line .*; 2 batches made ahead (--prefetch auto)\$" "$WORK/$name.stderr" ||
    fail "$name: the trainer does not say it makes 2 batches ahead (--prefetch auto)"
done
for name in auto auto_capped; do
  grep -q "$read_line .* MiB on cuda:0" "$WORK/$name.stderr" ||
    fail "$name: the trainer does not say the topology is on the GPU"
  grep -q "^\[trainer 0\] rank 0: training batches sampled on cuda:0 (--sampler auto: the topology, .* fits" \
    "$WORK/$name.stderr" || fail "$name: the trainer does not say it samples on its GPU, and why"
done
grep -q "^\[trainer 0\] rank 0: training batches sampled by the servers (--sampler auto: the feature rows come with the batches)" \
  "$WORK/auto_rows.stderr" || fail "auto_rows: the trainer does not say the servers sample, and why"
! grep -q "$read_line" "$WORK/auto_rows.stderr" || fail "auto_rows: the trainer read the topology"
for name in gpu auto auto_rows host auto_capped; do
  [[ ${FP[$name]} == "${FP[server]}" ]] ||
    fail "weights differ: $name ${FP[$name]}, --sampler server ${FP[server]} (the same batches must give the same weights)"
done
note "ok: every run ends with weights ${FP[gpu]}"
