#!/usr/bin/env python3
"""gridsampler3d against PyTorch's CPU kernels and a plain scalar loop, on the grids users make.

Grids (workloads.py): registration field, affine warp, random points, 2x down- and
up-sampling, identity plus noise. Layouts: NCDHW with C = 1 at 128^3 and NDHWC with C = 16 at
64^3. Border and reflection padding and float64 on the registration and affine grids;
float16 and bfloat16 (ours only: PyTorch 1.13 has no CPU kernel) on the registration grid.
Both directions, on one thread and on every CPU, in one process per thread count with the
same thread count for PyTorch (torch.set_num_threads) and us (OMP_NUM_THREADS).

Every case calls ours (the aclnn call through the package's runtime), PyTorch's aten op and,
on one thread, the scalar baseline (scalar_baseline.cpp) in turn within each repeat, and
reports medians; a variant (border, reflection, fp64, fp16, bf16) also calls ours in fp32
with zeros padding in turn, for its ratio to that. Ours is checked against the baseline's
values in every case.

Then the tricubic mode's rows (tricubic.py): against our trilinear and a plain scalar tricubic
loop, one thread.

Usage: bench.py [--quick] [--out DIR] [--threads N]
  (needs GRIDSAMPLER3D_LIBRARY, or build/ next to here; scripts/bench.sh builds and runs it)
Writes DIR/results.csv and DIR/speedup.png, and prints the table and the summary.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LAYOUTS = {"ncdhw": (1, 1, 128), "ndhwc": (1, 16, 64)}  # (N, C, S)
QUICK_LAYOUTS = {"ncdhw": (1, 1, 64), "ndhwc": (1, 16, 32)}


def cases():
    """(grid, layout, dtype, padding, op) of every row."""
    from workloads import GRIDS
    out = []
    for layout in LAYOUTS:
        for grid in GRIDS:
            out += [(grid, layout, "fp32", "zeros", op) for op in ("forward", "backward")]
    for grid in ("registration", "affine"):
        for padding in ("border", "reflection"):
            out += [(grid, "ncdhw", "fp32", padding, op) for op in ("forward", "backward")]
        out += [(grid, "ncdhw", "fp64", "zeros", op) for op in ("forward", "backward")]
    for dtype in ("fp16", "bf16"):
        out += [("registration", "ncdhw", dtype, "zeros", op) for op in ("forward", "backward")]
    return out


def median_times(fns, repeats):
    """Medians of each function's times, called in turn within every repeat (the host's speed
    drifts within minutes, and calls in turn see the same phases), the order reversed every
    other repeat (a call right after another library's finds the caches full of its data)."""
    for fn in fns:
        fn()  # warm-up
    times = [[] for _ in fns]
    for repeat in range(repeats):
        order = list(zip(fns, times))
        for fn, fn_times in (order if repeat % 2 == 0 else reversed(order)):
            start = time.perf_counter()
            fn()
            fn_times.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


class LibraryCall:
    """Ours on one problem (input, grid, gradOutput) with bilinear interpolation: the outputs
    are allocated here and held (the views are raw pointers), and the call's workspace size
    kept."""

    def __init__(self, runtime, view, op, problem, padding):
        import torch
        inp, grid, grad = self.problem = problem
        self.out, self.input_grad, self.grid_grad = torch.empty_like(grad), torch.empty_like(inp), torch.empty_like(grid)
        v = [view(t) for t in (inp, grid, grad, self.out, self.input_grad, self.grid_grad)]
        if op == "forward":
            self._run = lambda: runtime.forward(v[0], v[1], v[3], 0, padding, False)
        else:
            self._run = lambda: runtime.backward(v[2], v[0], v[1], v[4], v[5], 0, padding, False, (True, True))
        self.outputs = [self.out] if op == "forward" else [self.input_grad, self.grid_grad]
        self.workspace_bytes = 0

    def __call__(self):
        self.workspace_bytes = self._run()


def run_child(threads, quick, selection):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))  # the package of this checkout
    from gridsampler3d import _runtime, _torch
    from scalar import ScalarBaseline
    from workloads import make_problem

    torch.set_num_threads(threads)
    baseline = ScalarBaseline(os.environ.get("GS3D_SCALAR_BASELINE",
                                             os.path.join(ROOT, "build", "bench", "libgs3d_scalar_baseline.so")))
    dtypes = {"fp32": torch.float32, "fp64": torch.float64, "fp16": torch.float16, "bf16": torch.bfloat16}
    paddings = {"zeros": 0, "border": 1, "reflection": 2}
    layouts = QUICK_LAYOUTS if quick else LAYOUTS
    repeats = 3 if quick else 7
    view = lambda t: _torch._view(t, "tensor")
    results = []
    for grid_kind, layout, dtype_name, padding_name, op in selection:
        n, c, size = layouts[layout]
        dtype, padding = dtypes[dtype_name], paddings[padding_name]
        inp, grid, grad = make_problem(grid_kind, n, c, size, layout == "ndhwc", dtype)
        ours = LibraryCall(_runtime, view, op, (inp, grid, grad), padding)
        if op == "forward":
            theirs = lambda: torch.ops.aten.grid_sampler_3d(inp, grid, 0, padding, False)
            scalar_outputs = [torch.empty_like(ours.out)]
            scalar = lambda: baseline.forward(inp, grid, *scalar_outputs, padding)
        else:
            theirs = lambda: torch.ops.aten.grid_sampler_3d_backward(grad, inp, grid, 0, padding, False, [True, True])
            scalar_outputs = [torch.empty_like(inp), torch.empty_like(grid)]
            scalar = lambda: baseline.backward(grad, inp, grid, *scalar_outputs, padding)
        calls = [ours]
        has_torch = dtype in (torch.float32, torch.float64)  # PyTorch 1.13 has no fp16/bf16 CPU kernel
        has_scalar = threads == 1 and has_torch
        calls += [theirs] if has_torch else []
        calls += [scalar] if has_scalar else []
        # A variant (another padding or dtype) also times ours in fp32 with zeros padding on the
        # same grid, in turn, so that the ratio of the two sees the same phases of the host.
        has_base = (dtype_name, padding_name) != ("fp32", "zeros")
        if has_base:
            calls.append(LibraryCall(_runtime, view, op, make_problem(grid_kind, n, c, size, layout == "ndhwc"), 0))
        medians = median_times(calls, repeats)
        row = {"case": [grid_kind, layout, dtype_name, padding_name, op], "threads": threads, "N": n, "C": c,
               "S": size, "ours_s": medians[0], "torch_s": medians[1] if has_torch else None,
               "scalar_s": medians[2] if has_scalar else None, "base_s": medians[-1] if has_base else None,
               "workspace_bytes": ours.workspace_bytes}
        if has_scalar:  # the baseline and ours computed the same thing
            row["scalar_max_rel_diff"] = max(((a.double() - b.double()).abs().max() /
                                              b.double().abs().max().clamp(min=1e-30)).item()
                                             for a, b in zip(ours.outputs, scalar_outputs))
        results.append(row)
        print(f"  {op:8} {grid_kind:12} {layout} {dtype_name} {padding_name:10} threads={threads}: "
              f"ours {medians[0] * 1e3:.2f} ms" + (f", torch {medians[1] * 1e3:.1f} ms" if has_torch else "")
              + (f", scalar {medians[2] * 1e3:.1f} ms" if has_scalar else ""), file=sys.stderr, flush=True)
    print(json.dumps(results))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="half the sizes and 3 repeats: a smoke run")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="the 'every thread' count")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--selection", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    if args.child:
        run_child(args.child, args.quick, json.loads(args.selection))
        return
    os.environ.setdefault("GRIDSAMPLER3D_LIBRARY", os.path.join(ROOT, "build", "libgridsampler3d.so"))
    results = []
    started = time.perf_counter()
    for threads in sorted({1, args.threads}):
        selection = cases()
        print(f"running {len(selection)} cases with {threads} thread(s)...", file=sys.stderr, flush=True)
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        child = subprocess.run([sys.executable, __file__, "--child", str(threads), "--selection",
                                json.dumps(selection)] + (["--quick"] if args.quick else []),
                               env=env, capture_output=True, text=True)
        sys.stderr.write(child.stderr)
        if child.returncode != 0:
            sys.exit(f"bench.py: the {threads}-thread run failed (exit {child.returncode}); its output is above")
        results += json.loads(child.stdout.strip().splitlines()[-1])
    from report import report
    report(results, args.out, args.threads)
    import tricubic  # the tricubic mode's rows: against trilinear and a scalar tricubic loop
    tricubic.main(["--sizes", "48,64", "--repeats", "3"] if args.quick else [])
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
