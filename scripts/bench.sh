#!/usr/bin/env bash
# The benchmark: builds, then times gridsampler3d against PyTorch's CPU kernels in one process
# per thread count (bench/bench.py). Extra arguments go to bench.py (e.g. --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then  # for the plots only
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null
fi
bash scripts/build.sh >/dev/null
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} /usr/bin/python3 bench/bench.py "$@"
