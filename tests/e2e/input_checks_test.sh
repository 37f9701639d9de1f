#!/usr/bin/env bash
# Bad input, end to end: NaN features are refused at partition time naming the row
# (kept with --allow-nonfinite); a run on them stops at its first NaN loss naming the epoch and
# step, with a non-zero exit; a manifest whose feat_dtype contradicts feat.npy is refused naming
# the file; stale `.tmp-<pid>` folders of killed partition runs are removed, a live run's kept.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server

# Cora with a NaN in input row 5, feature 0.
mkdir -p "$WORK/nan_cora"
cp -r "$CORA/raw" "$CORA/split" "$WORK/nan_cora/"
zcat "$CORA/raw/node-feat.csv.gz" | sed '6s/^[^,]*,/nan,/' | gzip >"$WORK/nan_cora/raw/node-feat.csv.gz"

note "NaN features are refused"
status=0
timeout 120 "$BIN/graphshard-partition" partition --input "$WORK/nan_cora" --parts 2 \
  --method random --undirected --seed 1 --out "$WORK/nan_parts" >"$WORK/p.out" 2>"$WORK/p.err" ||
  status=$?
show "$WORK/p.err"
((status != 0 && status < 128)) || fail "partition of NaN features: status $status"
grep -q "input row 5, feature 0 is nan" "$WORK/p.err" || fail "the error does not name the row"
grep -q -- "--allow-nonfinite" "$WORK/p.err" || fail "the error does not name --allow-nonfinite"
[[ ! -e $WORK/nan_parts ]] || fail "a partition folder was left"
compgen -G "$WORK/nan_parts.tmp-*" >/dev/null && fail "a temporary folder was left"

note "stale temporary folders"
dead=$(bash -c 'echo $$')  # a process that has exited
mkdir -p "$WORK/parts.tmp-$dead/part_0" "$WORK/parts.tmp-$$"
timeout 120 "$BIN/graphshard-partition" partition --input "$CORA" --parts 2 --method random \
  --undirected --seed 1 --out "$WORK/parts" >"$WORK/p.out" 2>"$WORK/p.err" ||
  { show "$WORK/p.err"; fail "partition of Cora"; }
[[ ! -e $WORK/parts.tmp-$dead ]] || fail "the killed run's folder parts.tmp-$dead is still there"
grep -q "removed .*parts.tmp-$dead, left by a killed run" "$WORK/p.err" || fail "not reported"
[[ -d $WORK/parts.tmp-$$ ]] || fail "a live process's folder was removed"
grep -q "parts.tmp-$$ is being written by process $$" "$WORK/p.err" || fail "live one not reported"

note "a manifest whose feat_dtype contradicts feat.npy"
cp -r "$WORK/parts" "$WORK/dtype"
sed -i 's/"feat_dtype": "float32"/"feat_dtype": "float16"/' "$WORK/dtype/graphshard.json"
grep -q '"feat_dtype": "float16"' "$WORK/dtype/graphshard.json" || fail "sed did not apply"
status=0
timeout 60 "$BIN/graphshard-server" --partition "$WORK/dtype" --part 0 \
  --registry "$WORK/reg_dtype" >"$WORK/s.out" 2>"$WORK/s.err" || status=$?
show "$WORK/s.err"
((status == 1)) || fail "server on a contradictory feat_dtype: status $status"
grep -q "feat_dtype is 'float16', but part_0/nodes/node/feat.npy holds float32" "$WORK/s.err" ||
  fail "the error does not name the field and the file"

if [[ -x $BIN/graphshard-trainer ]]; then
  note "a bad GRAPHSHARD_SHARED_TIER_EXPORT stops the trainer at start, naming it"
  status=0
  GRAPHSHARD_SHARED_TIER_EXPORT=shm timeout 60 "$BIN/graphshard-trainer" --servers 127.0.0.1:1 \
    >"$WORK/t.out" 2>"$WORK/t.err" || status=$?
  ((status != 0 && status < 124)) || fail "bad GRAPHSHARD_SHARED_TIER_EXPORT: status $status"
  grep -q "GRAPHSHARD_SHARED_TIER_EXPORT=shm: not ipc or vmm" "$WORK/t.err" ||
    { show "$WORK/t.err"; fail "the error does not name the variable"; }
fi
if [[ -x $BIN/graphshard-trainer && -x $BIN/graphshard-health ]]; then
  note "NaN features kept with --allow-nonfinite: training stops at the first NaN loss"
  timeout 120 "$BIN/graphshard-partition" partition --input "$WORK/nan_cora" --parts 2 \
    --method random --undirected --seed 1 --allow-nonfinite --out "$WORK/nan_parts" \
    >"$WORK/p.out" 2>"$WORK/p.err" || { show "$WORK/p.err"; fail "--allow-nonfinite"; }
  status=0
  timeout 300 "$LAUNCH" --partition "$WORK/nan_parts" --servers 2 --trainers 2 --bin-dir "$BIN" \
    --registry "$WORK/registry" --server-wait-s 60 -- --model sage --epochs 3 --seed 1 \
    >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  show "$WORK/stderr"
  ((status != 0 && status != 124)) || fail "training on NaN features: launcher status $status"
  grep -q "epoch 1, step [0-9]* of [0-9]*: the training loss is nan" "$WORK/stderr" ||
    fail "the error does not name the epoch and step"
  ! grep -q '"test_acc"' "$WORK/stdout" || fail "a summary was printed"
fi
[[ -z $(procs_in_work) ]] || fail "processes left behind"
note "ok"
