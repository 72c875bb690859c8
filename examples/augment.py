#!/usr/bin/env python3
"""Random affine augmentation of 3-D volumes and their label maps with gridsampler3d.affine_warp.

Each sample of a batch of synthetic volumes (soft ellipsoids) and label maps (which ellipsoid
each voxel belongs to) gets its own random rotation about all three axes, scale and shift, as
a data loader's augmentation does: the image is resampled bilinearly with border padding, the
labels by nearest neighbour with zeros padding (no new label values appear). affine_warp
computes the coordinates on the fly; the same warps through PyTorch's composition,
F.grid_sample(F.affine_grid(theta)), are timed with the same threads, and both results are
compared.

    /usr/bin/python3 examples/augment.py --size 96 --batch 4 --rounds 5
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
    p.add_argument("--size", type=int, default=96, help="volume edge in voxels (default 96)")
    p.add_argument("--batch", type=int, default=4, help="samples per batch (default 4)")
    p.add_argument("--rounds", type=int, default=5, help="batches augmented, each with new warps (default 5)")
    p.add_argument("--threads", type=int, default=1,
                   help="threads for both (default 1, as in a data-loader worker)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def volumes(batch, size, generator):
    """(image, labels): (N, 1, S, S, S) float32 images and their label maps (0 = background)."""
    axis = torch.linspace(-1, 1, size)
    z, y, x = torch.meshgrid(axis, axis, axis, indexing="ij")
    points = torch.stack((x, y, z), dim=-1)
    image = torch.zeros(batch, 1, size, size, size)
    labels = torch.zeros(batch, 1, size, size, size)
    for n in range(batch):
        for label in range(1, 5):
            centre = torch.rand(3, generator=generator) - 0.5
            radii = torch.rand(3, generator=generator) * 0.25 + 0.15
            inside = (((points - centre) / radii) ** 2).sum(-1)
            image[n, 0] += (0.3 + 0.2 * label) * torch.sigmoid((1 - inside) * 8)
            labels[n, 0][inside < 1] = label
    return image, labels


def random_theta(batch, generator):
    """(N, 3, 4): rotations of up to 15 degrees about each axis, scales 0.9-1.1, shifts of up to
    0.1 (output coordinates to input)."""
    thetas = []
    for _ in range(batch):
        angles = (torch.rand(3, generator=generator) * 2 - 1) * math.radians(15)
        rotation = torch.eye(3)
        for axis, angle in enumerate(angles.tolist()):
            c, s = math.cos(angle), math.sin(angle)
            i, j = [(1, 2), (0, 2), (0, 1)][axis]
            r = torch.eye(3)
            r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
            rotation = rotation @ r
        scale = torch.diag(torch.rand(3, generator=generator) * 0.2 + 0.9)
        shift = (torch.rand(3, 1, generator=generator) * 2 - 1) * 0.1
        thetas.append(torch.cat([rotation @ scale, shift], dim=1))
    return torch.stack(thetas)


def augment_ours(image, labels, theta):
    return (gridsampler3d.affine_warp(image, theta, padding_mode="border"),
            gridsampler3d.affine_warp(labels, theta, mode="nearest"))


def augment_torch(image, labels, theta):
    grid = F.affine_grid(theta, list(image.shape), align_corners=False)
    return (F.grid_sample(image, grid, padding_mode="border", align_corners=False),
            F.grid_sample(labels, grid, mode="nearest", align_corners=False))


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    gridsampler3d.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(args.seed)
    image, labels = volumes(args.batch, args.size, generator)
    print(f"{args.rounds} batches of {args.batch} volumes {args.size}^3 and their label maps, {args.threads} threads")
    ours_seconds = torch_seconds = 0.0
    worst_image, label_mismatch = 0.0, 0
    with torch.no_grad():
        for round in range(1, args.rounds + 1):
            theta = random_theta(args.batch, generator)
            start = time.perf_counter()
            image_ours, labels_ours = augment_ours(image, labels, theta)
            ours_seconds += time.perf_counter() - start
            start = time.perf_counter()
            image_torch, labels_torch = augment_torch(image, labels, theta)
            torch_seconds += time.perf_counter() - start
            worst_image = max(worst_image, (image_ours - image_torch).abs().max().item())
            label_mismatch += int((labels_ours != labels_torch).sum())
            assert set(labels_ours.unique().tolist()) <= set(labels.unique().tolist()), "a new label appeared"
            print(f"batch {round}/{args.rounds}: labels kept {sorted(int(v) for v in labels_ours.unique())}", flush=True)
    voxels = args.rounds * image.numel()
    print(f"largest image difference from PyTorch's composition: {worst_image:.2e}; label voxels that differ: "
          f"{label_mismatch} of {voxels} (coordinates a rounding apart at a nearest tie)")
    print(f"time per batch: gridsampler3d.affine_warp {ours_seconds / args.rounds * 1e3:.1f} ms, "
          f"F.grid_sample(F.affine_grid) {torch_seconds / args.rounds * 1e3:.1f} ms: "
          f"{torch_seconds / ours_seconds:.2f}x faster (same {args.threads} threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
