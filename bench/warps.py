#!/usr/bin/env python3
"""The fused warps against the PyTorch compositions they replace, in one process.

- affine: F.grid_sample(F.affine_grid(theta, size)) against gridsampler3d.affine_warp, theta
  the benchmark's affine warp (12 degrees about x and y, scale 1.1, a shift);
- displacement: VoxelMorph's SpatialTransformer layer (its identity grid built once, as the
  layer holds it; the flow added, normalized, permuted and sampled in every call) against
  gridsampler3d.displacement_warp, the flow the benchmark's registration field (a 5^3 random
  field of 3 voxels upsampled).

NCDHW, C = 1, fp32, bilinear, zeros padding, 128^3 (--size), on one thread and on every CPU
(the same count for PyTorch and us). Forward alone, and forward + backward (gradients of the
input and of theta or the flow, as autograd computes them in training). Medians of 7, each
call timed in turn with its counterpart. Memory: the composition's grid (N, D, H, W, 3) and
our workspace, in MiB.

Usage: warps.py [--size S] [--repeats R]   (GRIDSAMPLER3D_LIBRARY, or build/ next to here)
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))  # the package of this checkout
os.environ.setdefault("GRIDSAMPLER3D_LIBRARY", os.path.join(os.path.dirname(HERE), "build", "libgridsampler3d.so"))
sys.path.insert(0, HERE)
import gridsampler3d  # noqa: E402
from gridsampler3d import _runtime, _torch  # noqa: E402
from bench import median_times  # noqa: E402
from workloads import affine_theta, voxel_flow  # noqa: E402

TARGETS = {("affine", "forward"): 15.0, ("affine", "forward+backward"): 8.0,
           ("displacement", "forward+backward"): 6.0}


class SpatialTransformer(torch.nn.Module):
    """VoxelMorph's layer (voxelmorph/torch/layers.py), as users run it."""

    def __init__(self, size):
        super().__init__()
        vectors = [torch.arange(0, s) for s in size]
        grid = torch.stack(torch.meshgrid(vectors, indexing="ij")).unsqueeze(0).type(torch.FloatTensor)
        self.register_buffer("grid", grid)

    def forward(self, src, flow):
        new_locs = self.grid + flow
        shape = flow.shape[2:]
        for i in range(len(shape)):
            new_locs[:, i, ...] = 2 * (new_locs[:, i, ...] / (shape[i] - 1) - 0.5)
        new_locs = new_locs.permute(0, 2, 3, 4, 1)[..., [2, 1, 0]]
        return F.grid_sample(src, new_locs, align_corners=True, mode="bilinear")


def calls(kind, size):
    """(theirs, ours) for the forward and for forward + backward."""
    gen = torch.Generator().manual_seed(1)
    inp = torch.rand(1, 1, size, size, size, generator=gen) * 2 - 1
    grad = torch.rand(1, 1, size, size, size, generator=gen) * 2 - 1
    if kind == "affine":
        parameters = affine_theta(1)
        shape = [1, 1, size, size, size]
        theirs = lambda x, p: F.grid_sample(x, F.affine_grid(p, shape, align_corners=False), align_corners=False)
        ours = lambda x, p: gridsampler3d.affine_warp(x, p, shape)
    else:
        parameters = voxel_flow(1, (size, size, size), 3.0, gen)
        layer = SpatialTransformer((size, size, size))
        theirs = layer
        ours = lambda x, p: gridsampler3d.displacement_warp(x, p)

    def forward(fn):
        with torch.no_grad():
            return lambda: fn(inp, parameters)

    def training(fn):
        def step():
            x, p = inp.clone().requires_grad_(), parameters.clone().requires_grad_()
            fn(x, p).backward(grad)
            return x.grad, p.grad
        return step

    return {"forward": (forward(theirs), forward(ours)), "forward+backward": (training(theirs), training(ours))}, \
        (inp, parameters, grad)


def workspace_mib(kind, inp, parameters, grad):
    view = lambda t: _torch._view(t, "tensor")
    out, input_grad, parameters_grad = torch.empty_like(grad), torch.empty_like(inp), torch.empty_like(parameters)
    forward = _runtime.warp_forward(kind, view(inp), view(parameters), view(out), 0, 0, False)
    backward = _runtime.warp_backward(kind, view(grad), view(inp), view(parameters), view(input_grad),
                                      view(parameters_grad), 0, 0, False, (True, True))
    return forward / 2 ** 20, backward / 2 ** 20


def main(argv):
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--size", type=int, default=128)
    args.add_argument("--repeats", type=int, default=7)
    args = args.parse_args(argv)
    all_threads = len(os.sched_getaffinity(0))
    grid_mib = args.size ** 3 * 3 * 4 / 2 ** 20
    print(f"fused warps, {args.size}^3, C = 1, fp32, bilinear, zeros; PyTorch {torch.__version__}")
    print(f"{'warp':13} {'call':17} {'threads':>7} {'PyTorch ms':>11} {'ours ms':>9} {'ratio':>7}  target")
    summary = []
    for threads in sorted({1, all_threads}):
        torch.set_num_threads(threads)
        gridsampler3d.set_num_threads(threads)
        for kind in ("affine", "displacement"):
            timed, problem = calls(kind, args.size)
            for call, (theirs, ours) in timed.items():
                t_theirs, t_ours = median_times([theirs, ours], args.repeats)
                ratio = t_theirs / t_ours
                target = TARGETS.get((kind, call)) if threads == 1 else None
                verdict = "" if target is None else f">= {target:g}x: {'met' if ratio >= target else 'NOT met'}"
                print(f"{kind:13} {call:17} {threads:7d} {t_theirs * 1e3:11.1f} {t_ours * 1e3:9.1f} {ratio:6.2f}x  {verdict}",
                      flush=True)
                if target is not None:
                    summary.append(ratio >= target)
    gridsampler3d.set_num_threads(0)
    for kind in ("affine", "displacement"):
        _, problem = calls(kind, args.size)
        forward, backward = workspace_mib(kind, *problem)
        print(f"memory, {kind}: the composition's grid {grid_mib:.1f} MiB (and as much for its gradient); "
              f"our workspace {forward:.2f} MiB forward, {backward:.2f} MiB backward")
    print(f"targets met: {sum(summary)} of {len(summary)}")


if __name__ == "__main__":
    main(sys.argv[1:])
