#!/usr/bin/env bash
# --profile-dir on Cora, 2 servers + 2 trainers (processes, Gloo, CPU), through the launcher:
# each rank writes profile_rank<k>.json for the steps of its second epoch (Cora's epochs are
# shorter than the 20-step window, so the whole epoch), with the step's phases on the CPU; the
# run trains as without it (same weights fingerprint); a --profile-dir that cannot be created
# is refused before training, naming it.
# shellcheck source=tests/e2e/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_bin graphshard-server graphshard-health graphshard-trainer
partition_cora "$WORK/cora2"

FLAGS=(--epochs 3 --eval-every 3 --hidden 16 --fanouts "5,5" --batch-size 16 --seed 3)
launch() { launch_named "$1" "$WORK/cora2" "${FLAGS[@]}" "${@:2}"; }  # NAME [trainer flags...]
fingerprint() { rank_fingerprint "$@"; }  # NAME RANK

launch plain
((STATUS == 0)) || { show "$WORK/plain.stderr"; fail "run without the profiler exited $STATUS"; }
launch profiled --profile-dir "$WORK/prof/nested"
((STATUS == 0)) || { show "$WORK/profiled.stderr"; fail "profiled run exited $STATUS"; }
for rank in 0 1; do
  f=$WORK/prof/nested/profile_rank$rank.json
  [[ -s $f ]] || { show "$WORK/profiled.stderr"; fail "no $f"; }
  grep -q "rank $rank: profiled steps 0-[0-9]* of epoch 2: $f" "$WORK/profiled.stderr" ||
    fail "rank $rank did not name its profile"
  python3 - "$f" "$rank" <<'PY' || fail "profile of rank $rank"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["rank"] == int(sys.argv[2]) and p["epoch"] == 2 and p["first_step"] == 0, p
assert 1 <= p["steps"] <= 20, p["steps"]
phases = p["cpu_phase_ms_per_step"]
for name in ("gs::next_batch", "gs::forward_backward", "gs::allreduce", "gs::optimizer"):
    assert phases.get(name, 0) > 0, (name, phases)
assert p["wall_ms_per_step"] >= phases["gs::forward_backward"], p
assert p["gpu_busy_ms_per_step"] == 0 and p["gpu_ops"] == 0, p  # a CPU run
assert p["kernel_launches_per_step"] == 0 and p["aten_ops_per_step"] > 50, p
print("rank", p["rank"], "steps", p["steps"], "phases", phases, file=sys.stderr)
PY
done
[[ $(fingerprint profiled 0) == "$(fingerprint plain 0)" && -n $(fingerprint plain 0) ]] ||
  fail "the profiled run's weights $(fingerprint profiled 0) differ from $(fingerprint plain 0)"

: >"$WORK/a_file"
launch baddir --profile-dir "$WORK/a_file/sub"
((STATUS != 0)) || fail "a --profile-dir under a file was accepted"
grep -q -- "--profile-dir $WORK/a_file/sub: cannot create the directory" "$WORK/baddir.stderr" ||
  { show "$WORK/baddir.stderr"; fail "the error does not name --profile-dir"; }
[[ -z $(procs_in_work) ]] || fail "processes left behind by the launcher"
note "ok: --profile-dir"
