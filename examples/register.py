#!/usr/bin/env python3
"""Deformable registration of a 3-D volume with gridsampler3d.displacement_warp.

A synthetic volume (a few soft ellipsoids) is warped by a known smooth displacement to make
the fixed image. Starting from no displacement, gradient descent (Adam) on a displacement
field u (N, 3, D, H, W), in voxels as VoxelMorph's networks output it, minimises

    mean((displacement_warp(moving, u) - fixed)^2) + smoothness * mean(|grad u|^2),

the warp and its gradients computed by the library without building the sampling grid. The
same loop then runs on VoxelMorph's SpatialTransformer layer (PyTorch's composition: the grid
built, normalized, permuted, then F.grid_sample) from the same start, with the same threads,
and the time per step of both is reported side by side. A PNG shows the middle slices
(fixed, moving, warped, |warped - fixed|) before and after.

    /usr/bin/python3 examples/register.py --size 48 --steps 60 --png build/register.png
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

try:
    import gridsampler3d
except ImportError:  # run from a checkout without installing the package: use python/ in it
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import gridsampler3d


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=48, help="volume edge in voxels (default 48)")
    p.add_argument("--steps", type=int, default=60, help="gradient steps (default 60)")
    p.add_argument("--lr", type=float, default=0.02,
                   help="Adam learning rate, in units of half the volume (default 0.02)")
    p.add_argument("--smoothness", type=float, default=0.05, help="weight of the smoothness term (default 0.05)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="threads for both samplers (default: the cores this process may use, %(default)s)")
    p.add_argument("--png", default="register.png", help="where to write the slices (default register.png)")
    p.add_argument("--no-torch-baseline", action="store_true", help="skip the timing run on PyTorch's sampler")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def identity_grid(size):
    """(1, D, H, W, 3) normalised coordinates (x, y, z) of the voxel centres (align_corners=False)."""
    axis = (torch.arange(size, dtype=torch.float32) * 2 + 1) / size - 1
    z, y, x = torch.meshgrid(axis, axis, axis, indexing="ij")
    return torch.stack((x, y, z), dim=-1)[None]


def synthetic_volume(size, generator):
    """Soft ellipsoids of random centre, radii and brightness on a dark background."""
    grid = identity_grid(size)[0]
    volume = torch.zeros(size, size, size)
    for _ in range(6):
        centre = torch.rand(3, generator=generator) * 1.0 - 0.5
        radii = torch.rand(3, generator=generator) * 0.25 + 0.15
        brightness = torch.rand(1, generator=generator).item() * 0.6 + 0.4
        r2 = (((grid - centre) / radii) ** 2).sum(-1)
        volume += brightness * torch.sigmoid((1 - r2) * 8)
    return volume[None, None]


def smooth_displacement(size, generator, amplitude=0.04):
    """A random low-frequency displacement (1, 3, D, H, W) in voxels along (D, H, W), of up to
    `amplitude` times the volume's size."""
    coarse = (torch.rand(1, 3, 4, 4, 4, generator=generator) * 2 - 1) * amplitude * size
    return F.interpolate(coarse, size=(size, size, size), mode="trilinear", align_corners=True)


def smoothness_penalty(u):
    dz = u[:, :, 1:] - u[:, :, :-1]
    dy = u[:, :, :, 1:] - u[:, :, :, :-1]
    dx = u[:, :, :, :, 1:] - u[:, :, :, :, :-1]
    return (dz ** 2).mean() + (dy ** 2).mean() + (dx ** 2).mean()


def spatial_transformer(moving, flow):
    """VoxelMorph's SpatialTransformer (voxelmorph/torch/layers.py) with border padding: the
    PyTorch composition that displacement_warp replaces."""
    shape = flow.shape[2:]
    axes = [torch.arange(0, s, dtype=flow.dtype) for s in shape]
    locations = torch.stack(torch.meshgrid(*axes, indexing="ij")).unsqueeze(0) + flow
    locations = torch.stack([2 * (locations[:, i] / (shape[i] - 1) - 0.5) for i in range(3)], dim=1)
    grid = locations.permute(0, 2, 3, 4, 1)[..., [2, 1, 0]]
    return F.grid_sample(moving, grid, mode="bilinear", padding_mode="border", align_corners=True)


def displacement_warp(moving, flow):
    return gridsampler3d.displacement_warp(moving, flow, mode="bilinear", padding_mode="border")


def progress_bar(step, steps, width=30):
    filled = int(round(width * step / steps))
    return "[" + "#" * filled + "." * (width - filled) + "]"


def register(warp, moving, fixed, args, label, verbose):
    """Adam on u (voxels) from zero; returns (u, losses, seconds per step)."""
    u = torch.zeros(1, 3, *moving.shape[2:], requires_grad=True)
    optimizer = torch.optim.Adam([u], lr=args.lr * moving.shape[2] / 2)  # --lr: half-volumes
    losses, start = [], time.perf_counter()
    for step in range(1, args.steps + 1):
        optimizer.zero_grad()
        warped = warp(moving, u)
        image_loss = ((warped - fixed) ** 2).mean()
        loss = image_loss + args.smoothness * smoothness_penalty(u)
        loss.backward()
        optimizer.step()
        losses.append(image_loss.item())
        if verbose:
            print(f"{label} {progress_bar(step, args.steps)} step {step:3d}/{args.steps} "
                  f"image loss {losses[-1]:.6f}", flush=True)
    return u.detach(), losses, (time.perf_counter() - start) / args.steps


def time_warp_alone(moving, flow, args, repeats=10):
    """Seconds per forward + backward of each warp on the final flow (the rest of a step, the
    loss and Adam, is the same work for both). torch's is None without the baseline."""
    def seconds(warp):
        f = flow.clone().requires_grad_()
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            warp(moving, f).sum().backward()
            best = min(best, time.perf_counter() - start)
        return best
    return seconds(displacement_warp), None if args.no_torch_baseline else seconds(spatial_transformer)


def write_png(path, moving, fixed, before, after):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    middle = fixed.shape[2] // 2
    slice_of = lambda v: v[0, 0, middle].numpy()
    rows = [("before", before), ("after", after)]
    fig, axes = plt.subplots(2, 4, figsize=(12, 6.4))
    for r, (name, warped) in enumerate(rows):
        panels = [("fixed", fixed), ("moving", moving), (f"warped ({name})", warped),
                  (f"|warped - fixed| ({name})", (warped - fixed).abs())]
        for c, (title, volume) in enumerate(panels):
            ax = axes[r][c]
            # Differences share one scale, the largest of the start, so that "after" shows the gain.
            top = (before - fixed).abs().max() if c == 3 else fixed.max()
            ax.imshow(slice_of(volume), cmap="magma" if c == 3 else "gray", vmin=0, vmax=max(1e-6, float(top)))
            ax.set_title(title, fontsize=10)
            ax.axis("off")
    fig.suptitle("gridsampler3d registration: middle axial slice")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    gridsampler3d.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(args.seed)
    moving = synthetic_volume(args.size, generator)
    truth = smooth_displacement(args.size, generator)
    with torch.no_grad():
        fixed = displacement_warp(moving, truth)

    print(f"volume {args.size}^3, {args.steps} steps, {args.threads} threads, library {gridsampler3d.library_path()}")
    u, losses, ours_seconds = register(displacement_warp, moving, fixed, args, "gridsampler3d", verbose=True)
    with torch.no_grad():
        after = displacement_warp(moving, u)
    print(f"image loss {losses[0]:.6f} -> {losses[-1]:.6f} ({losses[-1] / max(losses[0], 1e-30):.1%} of the start)")

    print(f"time per step: gridsampler3d {ours_seconds * 1e3:.1f} ms", end="")
    if not args.no_torch_baseline:
        _, torch_losses, torch_seconds = register(spatial_transformer, moving, fixed, args, "torch", verbose=False)
        print(f", VoxelMorph's SpatialTransformer on torch {torch_seconds * 1e3:.1f} ms: "
              f"{torch_seconds / ours_seconds:.2f}x faster (same {args.threads} threads); "
              f"torch's final image loss {torch_losses[-1]:.6f}")
    else:
        print()
    ours_alone, torch_alone = time_warp_alone(moving, u, args)
    print(f"warp forward + backward alone: gridsampler3d {ours_alone * 1e3:.2f} ms", end="")
    print(f", torch {torch_alone * 1e3:.2f} ms: {torch_alone / ours_alone:.2f}x faster" if torch_alone else "")
    write_png(args.png, moving, fixed, moving, after)
    print(f"wrote {args.png}")
    return 0 if math.isfinite(losses[-1]) else 1


if __name__ == "__main__":
    sys.exit(main())
