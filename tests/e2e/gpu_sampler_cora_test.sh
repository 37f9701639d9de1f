#!/usr/bin/env bash
# --sampler gpu end to end on Cora, on a GPU (label gpu: the GPU machine only; CI has none):
# deploy/graphshard-launch with 2 servers and 1 GPU trainer, --deterministic, once with the
# servers sampling (--feature-store device: batches as ids, rows on the GPU) and once with the
# trainer sampling on its GPU (trainer/gpu_sampler.h). The GPU sampler draws the servers'
# batches, so the weights must be the same bit for bit, test_acc >= 0.75, and the trainer must
# say what it read; the servers must build no training batch in the GPU run.
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
    --epochs 20 --eval-every 20 --seed 1 --deterministic --feature-store device \
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
run_one server --sampler server
note "the trainer samples on its GPU"
run_one gpu --sampler gpu
grep -q "^\[trainer 0\] rank 0: --sampler gpu: 2708 nodes, 10556 in-edges read in" "$WORK/gpu.stderr" ||
  fail "the GPU run does not say it read Cora's 2708 nodes and 10556 in-edges"
[[ ${FP[gpu]} == "${FP[server]}" ]] ||
  fail "weights differ: --sampler gpu ${FP[gpu]}, --sampler server ${FP[server]} (the same batches must give the same weights)"
note "ok: both runs end with weights ${FP[gpu]}"
