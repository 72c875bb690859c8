#!/usr/bin/env python3
"""Times row_design.cpp (a different design of the one-channel NCDHW fp32 backward, zeros
padding, one thread) against the library and PyTorch on bench.py's grids, in turn within
each repeat, and checks its values against the library's.

Usage: OMP_NUM_THREADS=1 /usr/bin/python3 bench/lab/row_design.py [S 128] [repeats 9]
       (after cmake -DGRIDSAMPLER3D_BUILD_LAB=ON and a build)
"""
import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("GRIDSAMPLER3D_LIBRARY", os.path.join(ROOT, "build", "libgridsampler3d.so"))

import torch  # noqa: E402

import gridsampler3d  # noqa: E402
from workloads import make_problem  # noqa: E402


def medians_in_turn(calls, repeats):
    """Milliseconds: each call's median, the calls made in turn (reversed every other repeat)."""
    times = {name: [] for name in calls}
    for fn in calls.values():
        fn()
    for r in range(repeats):
        for name, fn in (list(calls.items()) if r % 2 == 0 else reversed(list(calls.items()))):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 128
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    torch.set_num_threads(1)
    gridsampler3d.set_num_threads(1)
    lib = ctypes.CDLL(os.path.join(ROOT, "build", "bench", "lab", "libgs3d_row_design.so"))
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())
    for kind in ("registration", "affine", "up2x", "noise"):
        inp, grid, grad = make_problem(kind, 1, 1, size, False)
        ig, gg = torch.empty_like(inp), torch.empty_like(grid)
        d, h, w = inp.shape[2:]
        od, oh, ow = grid.shape[1:4]

        def design():
            lib.gs3d_row_design_backward(ptr(grad), ptr(inp), ptr(grid), ptr(ig), ptr(gg), *(ctypes.c_int64(v) for v in
                                                                                            (d, h, w, od, oh, ow)))

        calls = {"design": design, "library": lambda: gridsampler3d.grid_sample_backward(grad, inp, grid),
                 "pytorch": lambda: torch.ops.aten.grid_sampler_3d_backward(grad, inp, grid, 0, 0, False, [True, True])}
        med = medians_in_turn(calls, repeats)
        design()
        lib_ig, lib_gg = gridsampler3d.grid_sample_backward(grad, inp, grid)
        diff = max(((a - b).abs().max() / b.abs().max()).item() for a, b in ((ig, lib_ig), (gg, lib_gg)))
        out = torch.empty(grad.shape)
        forward_calls = {"design": lambda: lib.gs3d_row_design_forward(ptr(inp), ptr(grid), ptr(out), *(
            ctypes.c_int64(v) for v in (d, h, w, od, oh, ow))),
            "library": lambda: gridsampler3d.grid_sample(inp, grid),
            "pytorch": lambda: torch.ops.aten.grid_sampler_3d(inp, grid, 0, 0, False)}
        fmed = medians_in_turn(forward_calls, repeats)
        forward_calls["design"]()
        fdiff = ((out - gridsampler3d.grid_sample(inp, grid)).abs().max()).item()
        print(f"{kind:12} forward  design {fmed['design']:7.2f} ms  library {fmed['library']:7.2f} ms  "
              f"pytorch {fmed['pytorch']:7.2f} ms  library/design {fmed['library'] / fmed['design']:.2f}x  "
              f"pytorch/design {fmed['pytorch'] / fmed['design']:.2f}x  max diff {fdiff:.1e}")
        print(f"{kind:12} backward design {med['design']:7.2f} ms  library {med['library']:7.2f} ms  "
              f"pytorch {med['pytorch']:7.2f} ms  library/design {med['library'] / med['design']:.2f}x  "
              f"pytorch/design {med['pytorch'] / med['design']:.2f}x  max diff {diff:.1e}")


if __name__ == "__main__":
    main()
