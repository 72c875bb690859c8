"""examples/register.py on a small volume: it runs, its loss falls, it times both samplers and
writes its PNG."""
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
    assert re.search(r"time per step: gridsampler3d [0-9.]+ ms, torch.nn.functional.grid_sample [0-9.]+ ms",
                     result.stdout)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
