#!/usr/bin/env bash
# Installs the build tree into PREFIX, then builds and runs the C consumer against the
# installed tree twice: with pkg-config and with CMake's find_package.
# Usage: check_install.sh BUILD_DIR PREFIX WORK_DIR
set -euo pipefail
build=$1 prefix=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$prefix" "$work"
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/acl/acl.h include/aclnn/aclnn_base.h include/aclnnop/aclnn_grid_sampler3d.h \
         include/aclnnop/aclnn_grid_sampler3d_backward.h include/gridsampler3d/cpu_device.h include/gridsampler3d/warp3d.h lib/libgridsampler3d.so lib/pkgconfig/gridsampler3d.pc \
         lib/cmake/gridsampler3d/gridsampler3dConfig.cmake; do
  [ -e "$prefix/$f" ] || { echo "missing from the install: $f"; exit 1; }
done
mkdir -p "$work"
# pkg-config, C compiler, -Wall -Werror: the headers are clean C.
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" cc -std=c11 -Wall -Wextra -Werror "$here/consumer.c" -o "$work/consumer_pc" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs gridsampler3d)
LD_LIBRARY_PATH="$prefix/lib" "$work/consumer_pc"
# CMake package.
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer"   # the imported target carries the library's location in its RPATH
echo "install check passed"
