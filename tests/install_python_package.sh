#!/usr/bin/env bash
# Installs the Python package from the checkout as a user would with pip (no build isolation,
# no index: nothing is downloaded; Debian's setuptools), twice:
#   1. the README's command in a new venv with system site packages; the package must hold the
#      C library it built and use it, with no environment variable pointing anywhere;
#   2. into TARGET_DIR (pip --target), the folder the Python test suites import from.
# BUILD_DIR is the CMake tree the package's library is built in (GRIDSAMPLER3D_CMAKE_BUILD_DIR):
# the suite's own, already built, so that this test does not compile the kernels a second time.
# Usage: install_python_package.sh PYTHON SOURCE_DIR TARGET_DIR BUILD_DIR
set -euo pipefail
python=$1 source=$2 target=$3 build_dir=$4
export GRIDSAMPLER3D_CMAKE_BUILD_DIR=$build_dir PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
unset GRIDSAMPLER3D_LIBRARY GRIDSAMPLER3D_PREFIX

venv=$target-venv
rm -rf "$venv" "$target"
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --no-build-isolation --no-index "$source"
# From another folder, so that the checkout's python/ is not what gets imported.
(cd "$venv" && bin/python - <<'EOF'
import os, sys
import numpy as np
import gridsampler3d
import gridsampler3d.numpy as gnp
package = os.path.dirname(gridsampler3d.__file__)
assert package.startswith(sys.prefix), package
assert gridsampler3d.library_path() == os.path.join(package, "libgridsampler3d.so"), gridsampler3d.library_path()
assert not os.path.exists(os.path.join(package, "_checkout.py")), "a checkout path was recorded"
volume = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2)
centre = np.zeros((1, 1, 1, 1, 3), dtype=np.float32)
value = gnp.grid_sample(volume, centre, align_corners=True).item()
assert value == 3.5, value  # the mean of 0..7: the centre of a 2x2x2 volume
print("venv package", package, "uses", gridsampler3d.library_path())
EOF
)

"$python" -m pip install --quiet --no-build-isolation --no-index --no-deps --target "$target" "$source"
"$python" -c "import sys; sys.path.insert(0, '$target'); import gridsampler3d; print('installed', gridsampler3d.__file__)"
