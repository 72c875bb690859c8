#!/usr/bin/env python3
"""Upsampling a volume 2x with trilinear and with tricubic interpolation (mode="bicubic").

A smooth function, f(x, y, z) = sin(3x) cos(2y) + 0.5 sin(4z + 1) on [-1, 1]^3, is sampled on
a coarse grid of S^3 voxels (align_corners=True: the voxel centres span [-1, 1]), then
resampled onto the grid of 2S - 1 points per axis that halves the spacing, by
gridsampler3d.grid_sample with mode "bilinear" (trilinear in 3-D) and "bicubic" (tricubic),
border padding. Each result is compared with f sampled directly on the fine grid, over the
whole volume and inside (four fine points from the faces, beyond the reach of the padding:
near a face, border padding repeats the edge voxel for the taps outside, which costs tricubic
more than trilinear); --png writes a slice of the truth, both results and both errors.

    /usr/bin/python3 examples/upsample.py --size 24 --png docs/img/upsample.png
"""
import argparse
import os
import sys

import torch

try:
    import gridsampler3d
except ImportError:  # run from a checkout without installing the package: use python/ in it
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import gridsampler3d


# Tricubic's taps reach two coarse voxels (four fine points) beyond a point; nearer a face,
# border padding repeats the edge voxel, which a sloped function does not do.
INTERIOR_MARGIN = 4


def smooth_function(x, y, z):
    return torch.sin(3 * x) * torch.cos(2 * y) + 0.5 * torch.sin(4 * z + 1)


def sampled(points):
    """f on a points^3 grid spanning [-1, 1] per axis, as (1, 1, D, H, W) (D: z, W: x)."""
    axis = torch.linspace(-1, 1, points, dtype=torch.float64)
    z, y, x = torch.meshgrid(axis, axis, axis, indexing="ij")
    return smooth_function(x, y, z)[None, None]


def fine_grid(points):
    """The (1, D, H, W, 3) grid of the fine points, in grid_sample's (x, y, z) order."""
    axis = torch.linspace(-1, 1, points, dtype=torch.float64)
    z, y, x = torch.meshgrid(axis, axis, axis, indexing="ij")
    return torch.stack([x, y, z], dim=-1)[None]


def upsample(size):
    """(truth, {mode: result}) on the fine grid of 2 size - 1 points per axis."""
    coarse, fine = sampled(size), fine_grid(2 * size - 1)
    results = {mode: gridsampler3d.grid_sample(coarse, fine, mode=mode, padding_mode="border", align_corners=True)
               for mode in ("bilinear", "bicubic")}
    return sampled(2 * size - 1), results


def errors(truth, result, margin=0):
    """Max and RMS of |result - truth|, leaving out `margin` fine points at every face."""
    difference = (result - truth).abs()
    if margin:
        difference = difference[..., margin:-margin, margin:-margin, margin:-margin]
    return difference.max().item(), difference.pow(2).mean().sqrt().item()


def write_png(path, truth, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing (apt-get install python3-matplotlib): no picture", file=sys.stderr)
        return
    middle = truth.shape[2] // 2
    panels = [("truth", truth), ("trilinear", results["bilinear"]), ("tricubic", results["bicubic"]),
              ("trilinear error", results["bilinear"] - truth), ("tricubic error", results["bicubic"] - truth)]
    limit = max(abs(p[1][0, 0, middle]).max().item() for p in panels[3:])
    fig, axes = plt.subplots(1, 5, figsize=(15, 3.2))
    for ax, (title, volume) in zip(axes, panels):
        image = volume[0, 0, middle].numpy()
        error = title.endswith("error")
        ax.imshow(image, cmap="RdBu_r" if error else "viridis", vmin=-limit if error else None,
                  vmax=limit if error else None, origin="lower")
        ax.set_title(title + (f" (max {abs(image).max():.1e})" if error else ""), fontsize=9)
        ax.axis("off")
    fig.suptitle("a smooth volume upsampled 2x: the middle z slice; errors on one colour scale", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    print(f"wrote {path}")


def main(argv):
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--size", type=int, default=24, help="coarse voxels per axis (default 24)")
    args.add_argument("--png", help="write the slices to this PNG file")
    args = args.parse_args(argv)
    truth, results = upsample(args.size)
    print(f"f sampled on {args.size}^3 voxels, upsampled to {2 * args.size - 1}^3 (border padding, aligned corners)")
    print(f"{'':10} {'whole volume':>22} {'inside (4 points from faces)':>30}")
    print(f"{'mode':10} {'max error':>10} {'RMS error':>11} {'max error':>14} {'RMS error':>15}")
    for mode, name in (("bilinear", "trilinear"), ("bicubic", "tricubic")):
        largest, rms = errors(truth, results[mode])
        inner_largest, inner_rms = errors(truth, results[mode], margin=INTERIOR_MARGIN)
        print(f"{name:10} {largest:10.2e} {rms:11.2e} {inner_largest:14.2e} {inner_rms:15.2e}")
    if args.png:
        write_png(args.png, truth, results)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
