#!/usr/bin/env bash
# The main job: installs what the C sample needs (compiler, CMake, Highway; no Python), builds
# the library and the seed's sample program, and runs it: it calls aclnnGridSampler3DBackward
# on the CPU and prints inputGrad and gridGrad.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh sample
mkdir -p build
log=build/demo-build.log
echo "building the library and the sample program (the SIMD kernels take several minutes on 2 cores; log: $log)"
if ! bash scripts/build.sh sample 2>&1 | tee "$log" | sed -u -n '/^\[ *[0-9]*%\]/p'; then
  tail -n 40 "$log"
  echo "demo.sh: the build failed; the whole log is in $log" >&2
  exit 1
fi
./build/examples/grid_sampler3d_backward_sample
