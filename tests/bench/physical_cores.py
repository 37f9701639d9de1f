#!/usr/bin/env python3
"""CPU sets by physical core, for tests/bench/pin_bin_dir.sh's `cores` mode.

  physical_cores.py trainer R G  -> the logical CPUs of physical cores 2R and 2R+1 (both
                                    hyperthreads of each), trainer R of G
  physical_cores.py servers G    -> every logical CPU outside the first 2G physical cores
  physical_cores.py describe     -> the machine's physical cores, one line each

Physical cores come from /sys/devices/system/cpu/cpu*/topology/thread_siblings_list, ordered by
their first logical CPU; a machine that does not report them counts each logical CPU as a core.
"""
import glob
import os
import sys


def parse_list(text):
    cpus = []
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def physical_cores():
    groups = set()
    for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list"):
        with open(path) as f:
            groups.add(tuple(parse_list(f.read())))
    online = os.sched_getaffinity(0)
    cores = sorted(tuple(c for c in g if c in online) for g in groups)
    cores = [c for c in cores if c]
    return cores or [(c,) for c in sorted(online)]


def main(argv):
    cores = physical_cores()
    if argv[:1] == ["describe"]:
        for c in cores:
            print(",".join(map(str, c)))
        return 0
    if argv[:1] == ["trainer"] and len(argv) == 3:
        r = int(argv[1])
        picked = [cpu for core in cores[2 * r:2 * r + 2] for cpu in core]
    elif argv[:1] == ["servers"] and len(argv) == 2:
        g = int(argv[1])
        picked = [cpu for core in cores[2 * g:] for cpu in core]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if not picked:
        print(f"physical_cores.py {' '.join(argv)}: the machine has only {len(cores)} physical "
              "cores", file=sys.stderr)
        return 1
    print(",".join(map(str, picked)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
