#!/bin/bash
# pin_bin_dir.sh DIR MODE REAL_BIN_DIR: a BIN_DIR for gpu_train_bench.sh whose trainers and
# servers are pinned to CPU cores (an experiment: does CPU placement change the multi-GPU step?
# tests/bench/RESULTS.md, "The C++ step profiled"). DIR gets wrappers that exec REAL_BIN_DIR's
# binaries. MODE=numa: each trainer on its GPU's NUMA node (unpinned where the machine reports
# none). MODE=split: trainer r on 4 cores of its GPU's node (cores 4r..4r+3 without NUMA
# information), every server on all the other cores. MODE=cores: by physical core, hyperthreads
# counted (tests/bench/physical_cores.py): trainer r on both hyperthreads of physical cores 2r and
# 2r+1, every server on the cores after the first 2G (G: the GPUs nvidia-smi lists), whatever the
# run's trainer count, so that 1- and G-GPU runs give the servers the same CPUs. MODE=nice: no
# pinning; the servers run at nice 10, so that the trainers' threads go first where the two
# compete for cores. Needs
# nvidia-smi, taskset and python3.
#   bash tests/bench/pin_bin_dir.sh /tmp/psplit split build-gpu/bin
#   BIN_DIR=/tmp/psplit CONFIGS="2gpu_2srv_reg_dev" bash tests/bench/gpu_train_bench.sh
set -e
D=$1; MODE=$2; REAL=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$D"
for b in graphshard-partition graphshard-health; do ln -sf "$REAL/$b" "$D/$b"; done
cat > "$D/graphshard-trainer" <<EOT
#!/bin/bash
r=\${LOCAL_RANK:-0}
bus=\$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i \$r | tr 'A-F' 'a-f' | sed 's/^0000//')
node=\$(cat /sys/bus/pci/devices/\${bus,,}/numa_node 2>/dev/null || echo -1)
cpus=\$(cat /sys/devices/system/node/node\$node/cpulist 2>/dev/null || echo "")
echo "pin: rank \$r gpu bus \$bus numa node \$node cpus \$cpus mode $MODE" >&2
if [[ $MODE == cores ]]; then
  set=\$(python3 "$HERE/physical_cores.py" trainer \$r \$(nvidia-smi -L | wc -l)) || exit 1
  echo "pin: rank \$r on \$set" >&2
  exec taskset -c \$set "$REAL/graphshard-trainer" "\$@"
fi
if [[ $MODE == numa && -n \$cpus ]]; then exec taskset -c \$cpus "$REAL/graphshard-trainer" "\$@"; fi
if [[ $MODE == split ]]; then
  first=\$(python3 -c "import sys; s=sys.argv[1]; r=int(sys.argv[2]); a=[];
[a.extend(range(int(p.split('-')[0]), int(p.split('-')[-1])+1)) for p in s.split(',') if p]
a = a if a else list(range(32)); print(','.join(map(str,a[:4] if \$node>=0 else range(4*r,4*r+4))))" "\$cpus" \$r)
  echo "pin: rank \$r on \$first" >&2
  exec taskset -c \$first "$REAL/graphshard-trainer" "\$@"
fi
exec "$REAL/graphshard-trainer" "\$@"
EOT
cat > "$D/graphshard-server" <<EOT
#!/bin/bash
if [[ $MODE == nice ]]; then exec nice -n 10 "$REAL/graphshard-server" "\$@"; fi
if [[ $MODE == cores ]]; then
  set=\$(python3 "$HERE/physical_cores.py" servers \$(nvidia-smi -L | wc -l)) || exit 1
  echo "pin: server on \$set" >&2
  exec taskset -c \$set "$REAL/graphshard-server" "\$@"
fi
if [[ $MODE == split ]]; then
  # every core but the trainers' (the first 4 of each GPU's node, or 0-7)
  ex=\$(python3 -c "
import subprocess
ex=set()
for r in (0,1):
    bus=subprocess.run(['nvidia-smi','--query-gpu=pci.bus_id','--format=csv,noheader','-i',str(r)],capture_output=True,text=True).stdout.strip().lower()
    bus=bus[4:] if len(bus)==16 else bus
    try: node=int(open('/sys/bus/pci/devices/%s/numa_node'%bus).read())
    except Exception: node=-1
    cp=open('/sys/devices/system/node/node%d/cpulist'%node).read().strip() if node>=0 else ''
    a=[]
    [a.extend(range(int(p.split('-')[0]), int(p.split('-')[-1])+1)) for p in cp.split(',') if p]
    ex.update(a[:4] if a else range(4*r,4*r+4))
import os
print(','.join(str(c) for c in range(os.cpu_count()) if c not in ex))")
  echo "pin: server on \$ex" >&2
  exec taskset -c \$ex "$REAL/graphshard-server" "\$@"
fi
exec "$REAL/graphshard-server" "\$@"
EOT
chmod +x "$D/graphshard-trainer" "$D/graphshard-server"
