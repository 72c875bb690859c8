#!/usr/bin/env bash
# Installs from Debian's packages what gridsampler3d needs; skips apt when all is there.
# Usage: install-deps.sh [sample|all]
#   sample: the compiler, CMake and Highway: enough for the library and the C sample program;
#   all (default): also GoogleTest and Python with PyTorch, NumPy, pytest, Hypothesis and matplotlib, for
#   the tests, the Python package and the benchmark.
set -euo pipefail
packages=(cmake g++ make pkg-config libhwy-dev)
if [ "${1:-all}" = all ]; then
  packages+=(libgtest-dev python3-torch python3-numpy python3-pytest python3-hypothesis python3-pip python3-setuptools python3-wheel
             python3-venv python3-matplotlib)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
