#!/usr/bin/env bash
# The benchmark: builds, then times gridsampler3d against PyTorch's CPU kernels in one process
# per thread count (bench/bench.py; extra arguments go to it, e.g. --quick), then the fused
# warps against the compositions they replace (bench/warps.py).
# The measuring instruments (A/B of two builds, access floors, profiling) are in bench/lab.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh all
bash scripts/build.sh >/dev/null
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} /usr/bin/python3 bench/bench.py "$@"
# The fused warps against the PyTorch compositions they replace (bench/warps.py).
/usr/bin/python3 bench/warps.py
