#!/usr/bin/env bash
# Installs what building and testing gridsampler3d needs, from Debian's packages.
# Skips apt entirely when everything is already there.
set -euo pipefail
packages=(cmake g++ make pkg-config libgtest-dev libhwy-dev python3-torch python3-numpy python3-pytest
          python3-pip python3-setuptools python3-matplotlib)
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
