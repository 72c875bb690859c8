#!/usr/bin/env bash
# The tests: installs dependencies, builds, and runs every test with CTest (unit, reference
# matrix, finite differences, error codes, sample program, determinism, install, Python
# package and PyTorch cross-checks).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh all
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
