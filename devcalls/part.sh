#!/usr/bin/env bash
set -u
source .devdeps/use-deps.sh .devdeps
rm -rf /tmp/gsw && mkdir -p /tmp/gsw
/usr/bin/time -v timeout 570 build-gpu/bin/graphshard-partition partition --input /dev/shm/gsp/papers_1 --parts 4 --method stream --seed 1 --out /tmp/gsw/p4_stream >/tmp/part.log 2>/tmp/part.err
echo "partition rc $?"
grep -E "Elapsed|Maximum resident" /tmp/part.err
cp /tmp/part.log $OUT/part.log; cp /tmp/part.err $OUT/part.err
timeout 20 build-gpu/bin/graphshard-partition inspect /tmp/gsw/p4_stream --json --no-verify > $OUT/inspect.json 2>&1; tail -c 1500 $OUT/inspect.json
