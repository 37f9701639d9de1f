#!/usr/bin/env bash
# The host tier's bound, on the GPU machine (tests/bench/host_gather_bench.cu says what each
# case is): builds host_gather_bench with nvcc and runs it for each table size of TABLES_GIB
# ("1 32"), the "file" case in FILE_DIR (/dev/shm; a disk's folder for its page cache).
# Prints the JSON lines and appends them to $OUT/results.jsonl (OUT: ./host-gather-out).
# CASES: a comma-separated subset (e.g. "dma,device,peer,peer_ipc,sharded_both"; default all).
# ROW_BYTES: the bytes of a row (512; 400 for the products-shaped graph's; a multiple of 16).
# The sharded_ipc_nccl case is built where NCCL_HOME holds NCCL (source .devdeps/use-deps.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$ROOT/host-gather-out}
FILE_DIR=${FILE_DIR:-/dev/shm}
mkdir -p "$OUT"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
# With NCCL (NCCL_HOME, as .devdeps/use-deps.sh sets it on the GPU machine): the
# sharded_ipc_nccl case too.
NCCL_FLAGS=()
NCCL_LIB=$(find "${NCCL_HOME:-/nonexistent}/lib" -maxdepth 1 -name "libnccl.so*" 2>/dev/null | sort | head -1 || true)
if [[ -n $NCCL_LIB && -f $NCCL_HOME/include/nccl.h ]]; then
  # nvcc takes a library by -l, not by a versioned file name (libnccl.so.2 in PyTorch's wheel).
  NCCL_FLAGS=(-DHGB_NCCL -I"$NCCL_HOME/include" -L"$NCCL_HOME/lib" "-l:$(basename "$NCCL_LIB")"
    -Xlinker -rpath -Xlinker "$NCCL_HOME/lib")
fi
"$NVCC" -O2 -std=c++17 -arch="${CUDA_ARCH:-sm_90}" "$ROOT/tests/bench/host_gather_bench.cu" \
  -DHGB_ROW_BYTES="${ROW_BYTES:-512}" "${NCCL_FLAGS[@]}" -lcuda -o "$OUT/host_gather_bench"
echo "[host-gather] $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >&2
for gib in ${TABLES_GIB:-1 32}; do
  "$OUT/host_gather_bench" --table-gib "$gib" --rows-per-batch "${ROWS:-332000}" \
    --batches "${BATCHES:-10}" --threads "${THREADS:-16}" ${CASES:+--cases "$CASES"} \
    --file "$FILE_DIR/host_gather_bench.$$" | tee -a "$OUT/results.jsonl"
done
