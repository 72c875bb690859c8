#!/usr/bin/env bash
# Installs the Python package from the checkout into a fresh folder, as a user would with pip:
# no build isolation, no index (nothing is downloaded), Debian's setuptools.
# Usage: install_python_package.sh PYTHON SOURCE_DIR TARGET_DIR
set -euo pipefail
python=$1 source=$2 target=$3
rm -rf "$target"
PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
  --no-index --no-deps --target "$target" "$source"
"$python" -c "import sys; sys.path.insert(0, '$target'); import gridsampler3d; print('installed', gridsampler3d.__file__)"
