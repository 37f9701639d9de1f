#!/usr/bin/env bash
# A disk that fills up (small tmpfs mounts in a private mount namespace: as root, or through a
# user namespace), docs/DEPLOY.md "A full disk":
# 1. `graphshard-partition generate` and `partition` fail (non-zero) naming the file and "No
#    space left on device", and leave nothing behind (no half-written folder);
# 2. a checkpoint that no longer fits stops the run (non-zero) naming the file and the reason;
#    the checkpoint before it stays whole, no temporary is left, and a --resume run from it
#    (on a disk with room) finishes; --infer's outputs that do not fit are an error, and no
#    partial file is left;
# 3. a metrics file whose disk fills up mid-run is a warning: the run trains every epoch and
#    exits 0, the file keeps whole JSON lines only.
# 4. a full /dev/shm (Docker's default is 64 MiB): the servers send the batches inline instead
#    of in shared memory (they crashed with SIGBUS before), and the weights are those of the same
#    run with room.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
if [[ -z ${GRAPHSHARD_MOUNT_NS:-} ]]; then
  ns=(unshare --mount --propagation private)
  ((EUID == 0)) || ns=(unshare --map-root-user --mount --propagation private)
  GRAPHSHARD_MOUNT_NS=1 exec "${ns[@]}" bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-partition graphshard-server graphshard-trainer

# small_disk DIR SIZE: an empty tmpfs of SIZE (mount's units) at DIR (made).
small_disk() {
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2" tmpfs "$1" || fail "cannot mount a $2 tmpfs at $1"
}
# release DIR: unmounts it (before WORK is removed).
release() { umount "$1" || fail "cannot unmount $1"; }
# expect_no_space LOG WHAT: LOG says WHAT failed for want of space, naming a file under the disk.
expect_no_space() {
  grep -q "$2.*: write failed: No space left on device" "$1" ||
    { show "$1"; fail "no 'write failed: No space left on device' naming $2 in $1"; }
}

# 1. The partition tool.
small_disk "$WORK/disk1" 400k
status=0
timeout 120 "$BIN/graphshard-partition" generate --kind products --seed 1 --num-nodes 20000 \
  --avg-degree 10 --num-features 16 --out "$WORK/disk1/graph" >"$WORK/gen.log" 2>&1 || status=$?
((status != 0)) || fail "generate on a full disk exited 0"
expect_no_space "$WORK/gen.log" "$WORK/disk1/graph"
[[ -z $(ls -A "$WORK/disk1") ]] || fail "generate left $(ls -A "$WORK/disk1") on the full disk"
timeout 120 "$BIN/graphshard-partition" generate --kind products --seed 1 --num-nodes 20000 \
  --avg-degree 10 --num-features 16 --out "$WORK/graph" >"$WORK/gen2.log" 2>&1 ||
  { show "$WORK/gen2.log"; fail "generate with room"; }
status=0
timeout 120 "$BIN/graphshard-partition" partition --input "$WORK/graph" --parts 2 \
  --method random --seed 1 --out "$WORK/disk1/parts" >"$WORK/part.log" 2>&1 || status=$?
((status != 0)) || fail "partition on a full disk exited 0"
expect_no_space "$WORK/part.log" "$WORK/disk1/parts"
[[ -z $(ls -A "$WORK/disk1") ]] || fail "partition left $(ls -A "$WORK/disk1") on the full disk"
release "$WORK/disk1"
note "ok: generate and partition on a full disk fail naming the file, nothing left behind"

# 2. Checkpoints. The size of one, from a run with room.
partition_cora "$WORK/cora2"
FLAGS=(--model gcn --epochs 4 --eval-every 4 --hidden 32 --fanouts "10,10" --batch-size 32
       --seed 1)
launch_named sized "$WORK/cora2" "${FLAGS[@]}" --epochs 1 --checkpoint-dir "$WORK/ck_sized"
((STATUS == 0)) || { show "$WORK/sized.stderr"; fail "run with room exited $STATUS"; }
bytes=$(stat -c %s "$WORK/ck_sized/checkpoint.pt")
# Room for one checkpoint and half of another: the first is written, the second cannot be.
small_disk "$WORK/disk2" "$((bytes * 3 / 2 / 1024 + 8))k"
launch_named full "$WORK/cora2" "${FLAGS[@]}" --checkpoint-dir "$WORK/disk2/ck" \
  --checkpoint-every 2
((STATUS != 0)) || { show "$WORK/full.stderr"; fail "a checkpoint did not fit, the run exited 0"; }
expect_no_space "$WORK/full.stderr" "$WORK/disk2/ck/checkpoint.pt.tmp"
[[ $(ls -A "$WORK/disk2/ck") == checkpoint.pt ]] ||
  fail "the checkpoint folder holds '$(ls -A "$WORK/disk2/ck")', not the one whole checkpoint"
cp -r "$WORK/disk2/ck" "$WORK/ck_room"
release "$WORK/disk2"
launch_named resumed "$WORK/cora2" "${FLAGS[@]}" --checkpoint-dir "$WORK/ck_room" --resume
((STATUS == 0)) || { show "$WORK/resumed.stderr"; fail "resuming exited $STATUS"; }
grep -q "resuming from .* at epoch" "$WORK/resumed.stderr" ||
  { show "$WORK/resumed.stderr"; fail "the run did not resume from the kept checkpoint"; }
expect_same_weights "$WORK/resumed.stderr"
note "ok: a checkpoint that does not fit stops the run; the one before it resumes"
# ... and --infer's outputs on a full disk: an error naming the file, no partial file left.
small_disk "$WORK/disk4" 16k
launch_named infer "$WORK/cora2" "${FLAGS[@]}" --infer --checkpoint-dir "$WORK/ck_room" \
  --out "$WORK/disk4/out"
((STATUS != 0)) || { show "$WORK/infer.stderr"; fail "--infer onto a full disk exited 0"; }
expect_no_space "$WORK/infer.stderr" "$WORK/disk4/out/"
[[ -z $(find "$WORK/disk4" -name "*.tmp") ]] ||
  fail "--infer left $(find "$WORK/disk4" -name "*.tmp") on the full disk"
release "$WORK/disk4"
note "ok: --infer onto a full disk fails naming the file, no partial file left"

# 3. The metrics file: one page of disk holds the `run` record and a few epochs' records.
small_disk "$WORK/disk3" 4k
launch_named metrics "$WORK/cora2" "${FLAGS[@]}" --epochs 12 --eval-every 12 \
  --metrics-file "$WORK/disk3/metrics.jsonl"
if ((STATUS != 0)); then
  show "$WORK/metrics.stderr"
  release "$WORK/disk3"
  fail "a run whose metrics file filled up exited $STATUS"
fi
grep -q "^epoch 12 " "$WORK/metrics.stdout" || { show "$WORK/metrics.stdout"; fail "no epoch 12"; }
expect_summary "$WORK/metrics.stdout" 0.5 2
warning="warning: --metrics-file: $WORK/disk3/metrics.jsonl: write failed: No space left on device"
(($(grep -c "$warning" "$WORK/metrics.stderr") == 1)) ||
  { show "$WORK/metrics.stderr"; fail "not one warning naming the file"; }
python3 - "$WORK/disk3/metrics.jsonl" <<'PY' || fail "the metrics file is not whole records"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]  # a half line would not parse
events = [r["event"] for r in records]
assert events[0] == "run" and 1 < len(events) < 13 and set(events[1:]) == {"epoch"}, events
assert [r["epoch"] for r in records[1:]] == list(range(1, len(records))), records
print(f"metrics file: the run record and epochs 1-{len(records) - 1}", file=sys.stderr)
PY
release "$WORK/disk3"
note "ok: a full disk under the metrics file is a warning; the run trains on"

# 4. /dev/shm. The run with room first, then the same run with 64 KiB of /dev/shm (room for
# the servers' same-host proofs, not for a batch).
SHM_FLAGS=(--epochs 2 --eval-every 2 --fanouts "10,10" --batch-size 256 --seed 1)
launch_named shm_room "$WORK/cora2" "${SHM_FLAGS[@]}"
((STATUS == 0)) || { show "$WORK/shm_room.stderr"; fail "run with room in /dev/shm exited $STATUS"; }
expect_same_weights "$WORK/shm_room.stderr"
with_room=$FINGERPRINT
grep -q "shared memory" "$WORK/shm_room.stderr" &&
  { show "$WORK/shm_room.stderr"; fail "a run with room in /dev/shm went without it"; }
mount -t tmpfs -o size=64k tmpfs /dev/shm || fail "cannot mount a 64k tmpfs at /dev/shm"
launch_named shm_full "$WORK/cora2" "${SHM_FLAGS[@]}"
umount /dev/shm || fail "cannot unmount the small /dev/shm"
((STATUS == 0)) || { show "$WORK/shm_full.stderr"; fail "run with a full /dev/shm exited $STATUS"; }
grep -q "No space left on device; \(sending the batch inline\|gathering the batch into the heap\)" \
  "$WORK/shm_full.stderr" || { show "$WORK/shm_full.stderr"; fail "no server said it went inline"; }
expect_same_weights "$WORK/shm_full.stderr"
[[ $FINGERPRINT == "$with_room" ]] ||
  fail "weights $FINGERPRINT with a full /dev/shm, $with_room with room"
[[ -z $(procs_in_work) ]] || fail "processes left behind"
note "ok: a full /dev/shm sends batches inline, same weights ($with_room)"
