#!/usr/bin/env python3
"""Two builds of the library compared as bench.py times them: each of our calls right after
PyTorch's call on the same data.

ab_interleave (C++) alternates the two builds call by call, back to back ("hot") or after
64 MiB written ("cold"). bench.py's rows are neither: each of our calls follows PyTorch's,
which leaves the caches full of its own data and, at N = 1 (PyTorch 1.13's 3D kernels
parallelise over N only), one vCPU idle for tens to hundreds of milliseconds. A change can
gain in one condition and not in the other: the scan's one slab per batch item at N = 2
measured 0.93-0.95 hot on the nearest (2, 8, 64) backward and 0.98-1.02
here.

Each pair runs PyTorch then A, PyTorch then B (B first every other pair); the ratio B / A is
taken within each pair and the median printed with its quartiles, as ab_interleave does.

Usage: /usr/bin/python3 bench/lab/ab_after_torch.py LIB_A LIB_B forward|backward N C S
           [--mode bilinear|nearest] [--padding zeros|border|reflection] [--pairs 30] [--grid noise]
  LIB_A, LIB_B: two different library files (e.g. /tmp/a/libgridsampler3d.so.0, /tmp/b/...).
  Threads: OMP_NUM_THREADS for both sides, as bench.py. --grid: a grid kind of bench/workloads.py.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lib_a")
    parser.add_argument("lib_b")
    parser.add_argument("op", choices=("forward", "backward"))
    parser.add_argument("n", type=int)
    parser.add_argument("c", type=int)
    parser.add_argument("s", type=int)
    parser.add_argument("--mode", default="bilinear", choices=("bilinear", "nearest"))
    parser.add_argument("--padding", default="zeros", choices=("zeros", "border", "reflection"))
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--grid", default="noise", help="a grid of bench/workloads.py (default noise)")
    args = parser.parse_args()
    for path in (args.lib_a, args.lib_b):
        if not os.path.isfile(path):
            sys.exit(f"ab_after_torch: no library file {path}")
    if os.path.realpath(args.lib_a) == os.path.realpath(args.lib_b):
        sys.exit("ab_after_torch: LIB_A and LIB_B must be different files (each is loaded once)")

    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))  # the package of this checkout
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from workloads import make_problem
    from gridsampler3d import _arguments, _runtime, _torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())))
    # Both libraries loaded through the package, each with its own stream and workspace:
    # the package keeps one loaded library and one per-thread state, swapped before each call.
    states = {}
    for name, path in (("A", args.lib_a), ("B", args.lib_b)):
        os.environ["GRIDSAMPLER3D_LIBRARY"] = path
        _runtime._lib = None
        _runtime._threads.state = None
        _runtime._thread_state()
        states[name] = (_runtime._lib, _runtime._threads.state)

    inp, grid, grad = make_problem(args.grid, args.n, args.c, args.s, False)
    mode = _arguments.interpolation_code(args.mode)
    padding = _arguments.padding_code(args.padding)
    view = lambda t: _torch._view(t, "tensor")
    out, input_grad, grid_grad = torch.empty_like(grad), torch.empty_like(inp), torch.empty_like(grid)
    if args.op == "forward":
        views = [view(t) for t in (inp, grid, out)]
        call = lambda: _runtime.forward(*views, mode, padding, False)
        theirs = lambda: torch.ops.aten.grid_sampler_3d(inp, grid, mode, padding, False)
    else:
        views = [view(t) for t in (grad, inp, grid, input_grad, grid_grad)]
        call = lambda: _runtime.backward(*views, mode, padding, False, (True, True))
        theirs = lambda: torch.ops.aten.grid_sampler_3d_backward(grad, inp, grid, mode, padding, False, [True, True])

    def ours(name):
        _runtime._lib, _runtime._threads.state = states[name]
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    ours("A"), ours("B"), theirs()  # warm-up
    times = {"A": [], "B": []}
    ratios = []
    for pair in range(args.pairs):
        for name in ("A", "B") if pair % 2 == 0 else ("B", "A"):
            theirs()
            times[name].append(ours(name))
        ratios.append(times["B"][-1] / times["A"][-1])
    low, _, high = statistics.quantiles(ratios, n=4)
    print(f"A median {statistics.median(times['A']) * 1e3:.2f} ms, B median {statistics.median(times['B']) * 1e3:.2f} ms; "
          f"B/A per pair: median {statistics.median(ratios):.3f} (quartiles {low:.3f}-{high:.3f}, {args.pairs} pairs)")


if __name__ == "__main__":
    main()
