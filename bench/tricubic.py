#!/usr/bin/env python3
"""The tricubic mode against the library's trilinear and a plain scalar tricubic loop.

NCDHW, C = 1, fp32, zeros padding, the registration field (workloads.py), 96^3 and 128^3,
one thread. Forward alone and forward + backward (both gradients); ours in tricubic and in
trilinear, and the scalar loop (scalar_tricubic.cpp, in build/bench's baseline library), timed
in turn within each repeat, medians of --repeats. The scalar loop's results are checked
against ours. Prints the table and the targets: tricubic at most 4x trilinear's time forward
and 5x forward + backward; ours at least 3x faster than the scalar loop.

Usage: tricubic.py [--sizes 96,128] [--repeats R]   (GRIDSAMPLER3D_LIBRARY, or build/ next to here)
bench.py runs it after its own table.
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))  # the package of this checkout
os.environ.setdefault("GRIDSAMPLER3D_LIBRARY", os.path.join(ROOT, "build", "libgridsampler3d.so"))
sys.path.insert(0, HERE)
import gridsampler3d  # noqa: E402
from gridsampler3d import _runtime, _torch  # noqa: E402
from bench import median_times  # noqa: E402
from scalar import ScalarBaseline  # noqa: E402
from workloads import make_problem  # noqa: E402

TARGETS = {"forward": 4.0, "forward+backward": 5.0}  # tricubic's time over trilinear's, at most
SCALAR_TARGET = 3.0  # the scalar loop's time over ours, at least
TRILINEAR, TRICUBIC = 0, 2


def calls(size):
    """{op: (trilinear, tricubic, scalar tricubic, check)} on the registration problem."""
    inp, grid, grad = make_problem("registration", 1, 1, size, False)
    view = lambda t: _torch._view(t, "tensor")  # noqa: E731
    outputs = {mode: (torch.empty_like(grad), torch.empty_like(inp), torch.empty_like(grid)) for mode in ("ours", "scalar")}
    out, input_grad, grid_grad = outputs["ours"]
    baseline = ScalarBaseline(os.environ.get("GS3D_SCALAR_BASELINE",
                                             os.path.join(ROOT, "build", "bench", "libgs3d_scalar_baseline.so")))

    def ours_forward(mode):
        return lambda: _runtime.forward(view(inp), view(grid), view(out), mode, 0, False)

    def ours_training(mode):
        def step():
            _runtime.forward(view(inp), view(grid), view(out), mode, 0, False)
            _runtime.backward(view(grad), view(inp), view(grid), view(input_grad), view(grid_grad), mode, 0, False,
                              (True, True))
        return step

    s_out, s_input_grad, s_grid_grad = outputs["scalar"]

    def scalar_forward():
        baseline.forward(inp, grid, s_out, 0, tricubic=True)

    def scalar_training():
        baseline.forward(inp, grid, s_out, 0, tricubic=True)
        baseline.backward(grad, inp, grid, s_input_grad, s_grid_grad, 0, tricubic=True)

    def check():
        """The largest difference of ours from the scalar loop, relative to the largest value."""
        ours_training(TRICUBIC)()
        scalar_training()
        return max(((a.double() - b.double()).abs().max() / b.double().abs().max()).item()
                   for a, b in zip(outputs["ours"], outputs["scalar"]))

    return {"forward": (ours_forward(TRILINEAR), ours_forward(TRICUBIC), scalar_forward),
            "forward+backward": (ours_training(TRILINEAR), ours_training(TRICUBIC), scalar_training)}, check


def main(argv):
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--sizes", default="96,128")
    args.add_argument("--repeats", type=int, default=5)
    args = args.parse_args(argv)
    torch.set_num_threads(1)
    gridsampler3d.set_num_threads(1)
    print("\ntricubic (mode 2): registration field, NCDHW, C = 1, fp32, zeros, one thread")
    print(f"{'size':>5} {'call':17} {'trilinear ms':>13} {'tricubic ms':>12} {'scalar loop ms':>15} "
          f"{'tricubic/trilinear':>19} {'scalar/ours':>12}  targets")
    met = []
    for size in (int(s) for s in args.sizes.split(",")):
        timed, check = calls(size)
        difference = check()
        if difference > 1e-5:  # both sum the same fp32 terms in other orders
            sys.exit(f"tricubic.py: ours and the scalar loop differ by {difference:.2e} (relative) at {size}^3")
        for call, fns in timed.items():
            trilinear, tricubic, scalar = (t * 1e3 for t in median_times(list(fns), args.repeats))
            over, speedup = tricubic / trilinear, scalar / tricubic
            ok = over <= TARGETS[call], speedup >= SCALAR_TARGET
            met += list(ok)
            print(f"{size:5d} {call:17} {trilinear:13.1f} {tricubic:12.1f} {scalar:15.1f} {over:18.2f}x "
                  f"{speedup:11.2f}x  <= {TARGETS[call]:g}x: {'met' if ok[0] else 'NOT met'}, "
                  f">= {SCALAR_TARGET:g}x: {'met' if ok[1] else 'NOT met'}", flush=True)
    gridsampler3d.set_num_threads(0)
    print(f"tricubic targets met: {sum(met)} of {len(met)}")


if __name__ == "__main__":
    main(sys.argv[1:])
