#!/usr/bin/env bash
set -u
source .devdeps/use-deps.sh .devdeps
nproc; free -g | head -2; df -h /tmp /dev/shm | tail -2
SECONDS=0
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHSHARD_BUILD_TRAINER=OFF $DEVICE_CMAKE_ARGS >/tmp/cmake.log 2>&1 || { tail -20 /tmp/cmake.log; exit 1; }
cmake --build build-gpu -j32 --target graphshard-partition >/tmp/build.log 2>&1 || { tail -20 /tmp/build.log; exit 1; }
echo "built in $SECONDS s"
mkdir -p /dev/shm/gsp
/usr/bin/time -v build-gpu/bin/graphshard-partition generate --kind papers --scale 1 --seed 1 --out /dev/shm/gsp/papers_1 >/tmp/gen.log 2>/tmp/gen.err
echo "generate rc $?"; tail -5 /tmp/gen.log; grep -E "Elapsed|Maximum resident" /tmp/gen.err | tee $OUT/gen_time.txt
du -sh /dev/shm/gsp/papers_1
