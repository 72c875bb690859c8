"""Records the checkout the package was built from, so that an installed package finds the
library in that checkout's build tree (build/libgridsampler3d.so) too. The rest of the
metadata is in pyproject.toml."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BuildPyRecordingCheckout(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "gridsampler3d", "_checkout.py")
        with open(target, "w") as f:
            f.write(f'"""Written by setup.py: the checkout this package was built from."""\nCHECKOUT = {CHECKOUT!r}\n')


setup(cmdclass={"build_py": BuildPyRecordingCheckout})
