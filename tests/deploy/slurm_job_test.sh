#!/usr/bin/env bash
# deploy/slurm against real SLURM daemons on this host: a private munged, slurmctld and two
# slurmd (logical nodes gs1 and gs2, 2 CPUs and one fake GPU each: a device node, as the gres
# plugin needs a file), all configured in WORK, on free ports, with a fresh StateSaveLocation.
#  1. graphshard.sbatch, 2 nodes x (1 server + 1 CPU trainer), 5 epochs on a 3000-node
#     products-like graph in 2 parts: `sbatch --wait` exits 0, the output's JSON line has
#     test_acc >= 0.80 (0.95 seen), both ranks end with the same weights, nothing left behind.
#  2. graphshard-hetjob.sbatch (servers on component 0, a GPU trainer on component 1).
#  3. A failing trainer (bad flag): the job's exit status is the trainer's (2).
#  4. scancel mid-training: the servers drain ("stopped"), the job ends within 60 s, 143.
# Teardown (always): scontrol shutdown, then our daemons by pid; /etc/hosts restored if the
# hostname had to be added. Needs root, slurm-wlm and munge (deploy/install-deps.sh).
# shellcheck source=tests/deploy/lib.sh source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh" "$@"
need_root "it starts munged, slurmctld and slurmd" slurm
watchdog 420
need_tools slurmctld slurmd sbatch scontrol squeue scancel sinfo munged munge unmunge runuser \
  mknod python3 getent
need_bin graphshard-partition graphshard-server graphshard-health graphshard-trainer
getent passwd munge >/dev/null || fail "no munge user: is the munge package installed?"
[[ -r /etc/munge/munge.key ]] || fail "/etc/munge/munge.key missing (the munge package creates it)"

D=$WORK/slurm
mkdir -p "$D/state" "$D/spool" "$D/dev" "$D/munge"
host=$(hostname)

# --- the hostname must resolve to this machine (slurmd -N finds its node by NodeHostname) --------
hosts_line="127.0.0.1 $host # added by graphshard slurm_job_test"
restore_hosts() {
  # Remove only our line, in place (/etc/hosts may be a bind mount: never replace the file).
  local kept
  kept=$(grep -vxF -- "$hosts_line" /etc/hosts)
  printf '%s\n' "$kept" >/etc/hosts
}
addrs=$(getent ahostsv4 "$host" | awk '{ print $1 }' | sort -u | tr '\n' ' ' || true)
if [[ -z $addrs ]]; then
  note "$host does not resolve: adding '$hosts_line' to /etc/hosts for this test"
  printf '%s\n' "$hosts_line" >>/etc/hosts
  at_exit restore_hosts
else
  local_ok=0
  for a in $addrs; do
    [[ $a == 127.* ]] && local_ok=1
    ip -o addr show 2>/dev/null | grep -q " inet $a/" && local_ok=1
  done
  ((local_ok)) || fail "hostname $host resolves to $addrs, not to this machine: fix /etc/hosts"
fi

# --- munged (private socket) -------------------------------------------------------------------
chown munge:munge "$D/munge"
chmod 755 "$D" "$D/munge"
sock=$D/munge/munge.socket
timeout 20 runuser -u munge -- munged --socket="$sock" --pid-file="$D/munge/munged.pid" \
  --log-file="$D/munge/munged.log" --seed-file="$D/munge/seed" ||
  { show "$D/munge/munged.log"; fail "munged did not start"; }
stop_munged() {
  local pid
  pid=$(cat "$D/munge/munged.pid" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in {1..50}; do pid_alive "$pid" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}
at_exit stop_munged
timeout 10 munge -S "$sock" -n | timeout 10 unmunge -S "$sock" >/dev/null || fail "munge -n | unmunge failed"

# --- slurm.conf --------------------------------------------------------------------------------
read -r ctld_port port1 port2 < <(free_ports 3)
mknod "$D/dev/nvidia0" c 1 3
mknod "$D/dev/nvidia1" c 1 3
cat >"$D/slurm.conf" <<EOF
ClusterName=gstest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=10
GresTypes=gpu
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd-%n.log
NodeName=gs1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$port1 CPUs=2 Gres=gpu:1 RealMemory=2000 State=UNKNOWN
NodeName=gs2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$port2 CPUs=2 Gres=gpu:1 RealMemory=2000 State=UNKNOWN
PartitionName=gstest Nodes=gs1,gs2 Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$D/gres.conf" <<EOF
NodeName=gs1 Name=gpu File=$D/dev/nvidia0
NodeName=gs2 Name=gpu File=$D/dev/nvidia1
EOF
export SLURM_CONF=$D/slurm.conf

# --- daemons -----------------------------------------------------------------------------------
stop_slurm() {
  local f pid pids=()
  timeout 10 scontrol shutdown >/dev/null 2>&1
  for f in "$D"/slurmctld.pid "$D"/slurmd-*.pid; do
    pid=$(cat "$f" 2>/dev/null) && pids+=("$pid")
  done
  for _ in {1..100}; do
    local left=()
    for pid in "${pids[@]}"; do pid_alive "$pid" && left+=("$pid"); done
    ((${#left[@]} == 0)) && return 0
    ((_ == 50)) && kill -TERM "${left[@]}" 2>/dev/null
    sleep 0.1
  done
  echo "slurm daemons ignored shutdown and SIGTERM: SIGKILL ${left[*]}" >&2
  kill -KILL "${left[@]}" 2>/dev/null
}
dump_logs() {
  local f
  for f in "$D"/slurmctld.log "$D"/slurmd-*.log; do
    echo "---- last lines of $f" >&2
    tail -n 30 "$f" >&2 2>/dev/null
  done
}
at_exit stop_slurm
# shellcheck disable=SC2016  # evaluated at exit, in deploy_cleanup (status = the exit status)
at_exit '[[ $status == 0 ]] || dump_logs'
timeout 20 slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
timeout 20 slurmd -f "$SLURM_CONF" -N gs1 || fail "slurmd gs1 did not start"
timeout 20 slurmd -f "$SLURM_CONF" -N gs2 || fail "slurmd gs2 did not start"
for ((i = 0; ; i++)); do
  idle=$(timeout 10 sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l || true)
  ((idle == 2)) && break
  ((i < 300)) || { timeout 10 sinfo -N >&2; fail "gs1 and gs2 not idle after 30 s"; }
  sleep 0.1
done
note "slurm up: slurmctld :$ctld_port, slurmd gs1 :$port1, gs2 :$port2"

# --- data --------------------------------------------------------------------------------------
make_graph "$WORK/p2"
export GRAPHSHARD_BIN_DIR=$BIN
trainer_flags=(--epochs 5 --seed 1 --eval-every 5)

# submit NAME SCRIPT [sbatch args] -- [job args]: sbatch --wait; sets JOB_STATUS, JOB_OUT.
submit() {
  local name=$1 script=$2
  shift 2
  local sb=()
  while (($#)) && [[ $1 != -- ]]; do sb+=("$1"); shift; done
  shift
  JOB_OUT=$WORK/$name.out
  JOB_STATUS=0
  local t0=$SECONDS
  timeout 120 sbatch --wait --chdir="$WORK" --output="$JOB_OUT" "${sb[@]}" "$script" "$@" \
    >"$WORK/$name.sbatch.log" 2>&1 || JOB_STATUS=$?
  note "$name: sbatch --wait status $JOB_STATUS after $((SECONDS - t0)) s"
  ((JOB_STATUS != 124)) || { show "$JOB_OUT"; fail "$name: sbatch --wait timed out"; }
}

# --- 1. the batch script, 2 nodes -------------------------------------------------------------
submit homogeneous "$SRC/deploy/slurm/graphshard.sbatch" -- --partition "$WORK/p2" -- \
  "${trainer_flags[@]}"
show "$JOB_OUT"
((JOB_STATUS == 0)) || fail "graphshard.sbatch: job status $JOB_STATUS"
check_summary "$(grep '^{' "$JOB_OUT" | tail -n 1)" 0.80 2
mapfile -t fps < <(sed -n 's/^rank [0-9]* weights_fingerprint \([0-9a-f]*\)$/\1/p' "$JOB_OUT" | sort -u)
((${#fps[@]} == 1)) || fail "expected one weights fingerprint over both ranks, got: ${fps[*]:-none}"
grep -q 'MASTER_ADDR=127.0.0.1 MASTER_PORT=1000' "$JOB_OUT" || fail "MASTER_ADDR/MASTER_PORT not as documented"
(($(grep -c 'graphshard-server: stopped' "$JOB_OUT") == 2)) || fail "both servers should stop gracefully"
compgen -G "$WORK/graphshard-job.*" >/dev/null && fail "the job left its folder (registry, exit statuses) behind"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the job"

# --- 2. the heterogeneous job: servers on gs1 (component 0), the trainer on gs2 (component 1) ---
# One node per component here: the header's defaults (2 server nodes) do not fit 2 nodes.
sed -e 's/^#SBATCH --nodes=2 .*/#SBATCH --nodes=1/' "$SRC/deploy/slurm/graphshard-hetjob.sbatch" \
  >"$WORK/hetjob.sbatch"
GRAPHSHARD_HOME=$SRC submit hetjob "$WORK/hetjob.sbatch" -- --partition "$WORK/p2" -- \
  "${trainer_flags[@]}"
show "$JOB_OUT"
((JOB_STATUS == 0)) || fail "graphshard-hetjob.sbatch: job status $JOB_STATUS"
check_summary "$(grep '^{' "$JOB_OUT" | tail -n 1)" 0.80 1
grep -q "2 server(s) on gs1; 1 trainer(s) on gs2" "$JOB_OUT" || fail "hetjob layout not as expected"

# --- 3. a failing trainer: the job's status is the trainers' ----------------------------------
submit badflag "$SRC/deploy/slurm/graphshard.sbatch" -- --partition "$WORK/p2" -- --no-such-flag
show "$JOB_OUT"
((JOB_STATUS == 2)) || fail "a trainer exiting 2 (bad flag): job status $JOB_STATUS, want 2"
[[ -z $(procs_in_work) ]] || fail "processes left behind by the failed job"

# --- 4. scancel while training: drain, stop, 143 ----------------------------------------------
out=$WORK/cancel.out
jid=$(timeout 20 sbatch --parsable --chdir="$WORK" --output="$out" \
  "$SRC/deploy/slurm/graphshard.sbatch" --partition "$WORK/p2" -- --epochs 1000 --seed 1) ||
  fail "sbatch (cancel case)"
for ((i = 0; ; i++)); do
  grep -q '^epoch 2 ' "$out" 2>/dev/null && break
  ((i < 1200)) || { show "$out"; fail "the job to cancel did not reach epoch 2 in 120 s"; }
  sleep 0.1
done
t0=$SECONDS
timeout 10 scancel "$jid" || fail "scancel $jid"
while [[ -n $(timeout 10 squeue -h -j "$jid" 2>/dev/null) ]]; do
  ((SECONDS - t0 < 60)) || { show "$out"; fail "job $jid still in the queue 60 s after scancel"; }
  sleep 0.2
done
note "cancelled job $jid gone after $((SECONDS - t0)) s"
show "$out"
state=$(timeout 10 scontrol show job "$jid" | grep -o 'JobState=[A-Z]*\|ExitCode=[0-9:]*' | tr '\n' ' ')
[[ $state == *JobState=CANCELLED* ]] || fail "job $jid: $state"
(($(grep -c 'graphshard-server: stopped' "$out") == 2)) || fail "servers did not drain and stop on scancel"
sleep 1
[[ -z $(procs_in_work) ]] || fail "processes left behind after scancel"
note "ok"
