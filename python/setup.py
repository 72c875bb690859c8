"""Builds the C library with CMake and puts it inside the package, so that

    pip install --no-build-isolation --no-index ./python

is the one command a PyTorch user needs (offline, Debian's setuptools). The rest of the
metadata is in pyproject.toml.

GRIDSAMPLER3D_CMAKE_BUILD_DIR names a CMake build tree to use instead of a fresh one (an
existing, configured tree such as the checkout's build/ is only brought up to date; a
relative path is taken from the checkout's root); the
default is a folder under setuptools' build_temp, which pip keeps between installs from the
same checkout, so a second install rebuilds only what changed.
"""
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY_NAME = "libgridsampler3d.so"


def run(command):
    print("gridsampler3d:", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def build_library(build_dir):
    """Configures (unless build_dir is configured already) and builds the library target alone;
    returns the path of the shared library it made."""
    if not os.path.isfile(os.path.join(SOURCE_ROOT, "CMakeLists.txt")):
        sys.exit(f"gridsampler3d: no CMakeLists.txt in {SOURCE_ROOT}; install from a checkout of the repository "
                 "(pip install ./python), which holds the C library's sources")
    if shutil.which("cmake") is None:
        sys.exit("gridsampler3d: cmake is needed to build the C library: apt-get install cmake g++ libhwy-dev")
    if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
        run(["cmake", "-S", SOURCE_ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
             "-DGRIDSAMPLER3D_BUILD_TESTS=OFF", "-DGRIDSAMPLER3D_BUILD_EXAMPLES=OFF"])
    run(["cmake", "--build", build_dir, "--target", "gridsampler3d", "-j", str(os.cpu_count() or 1)])
    return os.path.realpath(os.path.join(build_dir, LIBRARY_NAME))


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        build_dir = os.environ.get("GRIDSAMPLER3D_CMAKE_BUILD_DIR")
        if build_dir:  # a relative one is the checkout's (pip runs this in python/)
            build_dir = os.path.join(SOURCE_ROOT, build_dir)
        else:
            build_dir = os.path.join(self.get_finalized_command("build").build_temp, "cmake")
        library = build_library(os.path.abspath(build_dir))
        # The real file under the plain name: a wheel holds no symbolic links.
        shutil.copyfile(library, os.path.join(self.build_lib, "gridsampler3d", LIBRARY_NAME))


class BinaryDistribution(Distribution):
    """The package holds a compiled library: a wheel for this platform, not a pure one."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
