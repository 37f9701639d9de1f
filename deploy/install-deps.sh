#!/usr/bin/env bash
# Installs the Debian 12 packages that graphshard's build and tests need. Idempotent: when every
# package is already installed it changes nothing and does not touch apt at all; `apt-get update`
# runs only when a package is missing and the package lists are empty or older than a day.
# Runs as root, or through sudo otherwise.
set -euo pipefail

packages=(
  cmake g++ ninja-build ccache pkg-config           # toolchain (CMakePresets.json: Ninja + ccache)
  lld                                               # linker (CMakeLists.txt: GRAPHSHARD_LLD)
  clang libclang-rt-14-dev                          # CI: -Wthread-safety, TSan, libFuzzer (deploy/test.sh)
  libgrpc++-dev protobuf-compiler-grpc grpc-proto   # gRPC, grpc_cpp_plugin, health.proto
  libprotobuf-dev protobuf-compiler                 # protobuf
  libabsl-dev libboost-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev                         # tests
  libtorch-dev libgloo-dev                          # trainer (CPU LibTorch, Gloo headers)
  libopenblas0-pthread                              # fast BLAS for LibTorch (reference BLAS is ~5x slower)
  libmetis-dev                                      # partitioner
  libssl-dev openssl                                # job proofs (HMAC), launcher's certificates
  python3 procps                                    # launcher: free port; tests: pgrep/ps
  slurm-wlm munge iproute2                          # tests/deploy: SLURM daemons, netns, tc
  python3-numpy                                     # tests/bench/gen_products_like.py
  python3-dev pybind11-dev python3-torch            # python/ (graphshard package) and its tests
  python3-matplotlib                                # tools/plot_metrics.py (demo.sh's PNG)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed" >&2
  exit 0
fi

if ((EUID == 0)); then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo DEBIAN_FRONTEND=noninteractive)
else
  echo "install-deps: missing ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Update the lists only when they are absent or stale (a fresh container has none), and once
# more if the install still fails on them (a mirror that moved on since the last update).
updated=0
if [[ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 -print -quit \
            2>/dev/null)" ]]; then
  "${as_root[@]}" apt-get update
  updated=1
fi
if ! "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
  ((updated)) && exit 1
  "${as_root[@]}" apt-get update
  "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
