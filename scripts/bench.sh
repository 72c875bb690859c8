#!/usr/bin/env bash
# The benchmark: builds, then times gridsampler3d against PyTorch's CPU kernels in one process
# per thread count (bench/bench.py). Extra arguments go to bench.py (e.g. --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} /usr/bin/python3 bench/bench.py "$@"
# The one-channel backward against the floor of its memory accesses at (1, 1, 128), the
# issue's slowest shape against PyTorch (bench/access_floor.cpp; about 5 seconds).
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} build/bench/access_floor 128 0.05 20
