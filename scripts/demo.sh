#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs the seed's sample program, which calls
# aclnnGridSampler3DBackward on the CPU and prints inputGrad and gridGrad.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
./build/examples/grid_sampler3d_backward_sample
