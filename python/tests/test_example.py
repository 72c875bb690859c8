"""The examples on small volumes: register.py runs, its loss falls, it times both warps and
writes its PNG; augment.py keeps the label values and agrees with PyTorch's composition;
upsample.py's tricubic is closer to the function inside than trilinear, and writes its PNG."""
import os
import re
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "register.py")


def test_register_example(tmp_path):
    png = tmp_path / "register.png"
    result = subprocess.run([sys.executable, EXAMPLE, "--size", "16", "--steps", "20", "--threads", "2",
                             "--png", str(png)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    losses = [float(v) for v in re.findall(r"step +\d+/20 image loss ([0-9.e+-]+)", result.stdout)]
    assert len(losses) == 20
    assert losses[-1] < 0.5 * losses[0], losses
    assert re.search(r"time per step: gridsampler3d [0-9.]+ ms, VoxelMorph's SpatialTransformer on torch [0-9.]+ ms",
                     result.stdout)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


AUGMENT = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "augment.py")


def test_augment_example():
    result = subprocess.run([sys.executable, AUGMENT, "--size", "24", "--batch", "2", "--rounds", "2"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert len(re.findall(r"batch \d/2: labels kept \[0(, \d)*\]", result.stdout)) == 2
    difference = float(re.search(r"largest image difference from PyTorch's composition: ([0-9.e+-]+)",
                                 result.stdout).group(1))
    assert difference < 1e-4  # coordinates rounded once against PyTorch's fp32 sums: a few ulps
    assert re.search(r"time per batch: gridsampler3d.affine_warp [0-9.]+ ms, F.grid_sample\(F.affine_grid\) [0-9.]+ ms",
                     result.stdout)


UPSAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "upsample.py")


def test_upsample_example(tmp_path):
    png = tmp_path / "upsample.png"
    result = subprocess.run([sys.executable, UPSAMPLE, "--size", "16", "--png", str(png)], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = {name: [float(v) for v in values.split()] for name, values in
            re.findall(r"^(trilinear|tricubic) +([0-9.e+\- ]+)$", result.stdout, re.MULTILINE)}
    assert set(rows) == {"trilinear", "tricubic"}, result.stdout
    # inside, beyond the padding's reach, the cubic kernel is the closer on a smooth function
    assert rows["tricubic"][2] < rows["trilinear"][2] and rows["tricubic"][3] < rows["trilinear"][3], rows
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
