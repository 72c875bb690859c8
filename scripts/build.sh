#!/usr/bin/env bash
# Configures and builds into build/ (Release).
# Usage: build.sh [sample]
#   sample: the library and the C sample program only (no GoogleTest needed);
#   otherwise everything: library, examples, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = sample ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGRIDSAMPLER3D_BUILD_TESTS=OFF >/dev/null
  cmake --build build -j"$(nproc)" --target grid_sampler3d_backward_sample
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGRIDSAMPLER3D_BUILD_TESTS=ON >/dev/null
  cmake --build build -j"$(nproc)"
fi
