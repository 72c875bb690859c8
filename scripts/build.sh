#!/usr/bin/env bash
# Configures and builds into build/ (DESIGN.md's build command).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
