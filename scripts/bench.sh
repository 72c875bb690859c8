#!/usr/bin/env bash
# The benchmark: builds, then times gridsampler3d against PyTorch's CPU kernels in one process
# per thread count (bench/bench.py; extra arguments go to it, e.g. --quick), then the fused
# warps against the compositions they replace (bench/warps.py), then MONAI's transforms stock
# and patched (bench/monai_transforms.py) where MONAI is at hand.
# The measuring instruments (A/B of two builds, access floors, profiling) are in bench/lab.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh all
bash scripts/build.sh >/dev/null
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} /usr/bin/python3 bench/bench.py "$@"
# The fused warps against the PyTorch compositions they replace (bench/warps.py).
/usr/bin/python3 bench/warps.py
# MONAI's Affine, RandAffine and Warp, stock and patched, where ../shared holds MONAI or it is installed.
if [ -d ../shared/thirdparty/monai-1.3.0 ] || /usr/bin/python3 -c "import monai" 2>/dev/null; then
    /usr/bin/python3 bench/monai_transforms.py
else
    echo "bench/monai_transforms.py skipped: MONAI is not importable and ../shared/thirdparty/monai-1.3.0 is absent"
fi
