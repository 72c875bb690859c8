#!/usr/bin/env bash
# The benchmark: builds, then times gridsampler3d against PyTorch's CPU kernels in one process
# per thread count (bench/bench.py). Extra arguments go to bench.py (e.g. --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} /usr/bin/python3 bench/bench.py "$@"
# The backward against the floor of its memory accesses at the issue's four shapes
# (bench/access_floor.cpp; about 10 seconds): bilinear, the one-channel scan at (1, 1, 128)
# and the channels-last blocks (the library's NDHWC and NCDHW calls) at the three others;
# then nearest at the four.
for mode in bilinear nearest; do
    for shape in "128 0.05 20 1 1" "96 0.05 20 4 1" "64 0.05 20 8 2" "48 0.05 20 32 1"; do
        # shellcheck disable=SC2086  # the shape's words are the program's arguments
        OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} build/bench/access_floor $shape $mode
    done
done
