"""The grids users make, as the benchmark samples them: (N, Do, Ho, Wo, 3) tensors of (x, y, z)
in [-1, 1] for align_corners=False, and the input sizes they sample.

- registration: the identity plus a smooth random displacement of a few voxels (a coarse
  random field upsampled), as a deformable registration's field;
- affine: a rotation of 12 degrees about two axes, a scale of 1.1 and a shift (spatial
  transformers, augmentation);
- random: uniform points in [-1, 1];
- down2x: the identity sampled at half the input's size per axis;
- up2x: the identity sampled at twice the input's size per axis;
- noise: the identity plus independent Gaussian noise of 0.05 per point (the benchmark's
  former only grid: about 3 voxels at 128, independently at every point).
"""
import math

import torch
import torch.nn.functional as F

GRIDS = ("registration", "affine", "random", "down2x", "up2x", "noise")


def identity(n, out_size):
    theta = torch.eye(3, 4).unsqueeze(0).repeat(n, 1, 1)
    return F.affine_grid(theta, (n, 1, *out_size), align_corners=False)


def rotation(axis, degrees):
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    i, j = [(1, 2), (0, 2), (0, 1)][axis]
    r = torch.eye(3)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r


def smooth_displacement(n, out_size, voxels, gen):
    """A coarse random field of 5^3 nodes (about `voxels` voxels of standard deviation),
    upsampled trilinearly to the output: (N, D, H, W, 3) in normalised units."""
    coarse = torch.randn(n, 3, 5, 5, 5, generator=gen) * voxels
    field = F.interpolate(coarse, size=out_size, mode="trilinear", align_corners=True)
    scale = torch.tensor([2.0 / out_size[2], 2.0 / out_size[1], 2.0 / out_size[0]])  # voxels of x, y, z
    return field.permute(0, 2, 3, 4, 1) * scale


def affine_theta(n):
    """The affine grid's theta (N, 3, 4): output coordinates to input, a rotation of 12 degrees
    about x and y, a scale of 1.1 and a shift."""
    linear = rotation(0, 12.0) @ rotation(1, 12.0) / 1.1
    theta = torch.cat([linear, torch.tensor([[0.05], [-0.03], [0.04]])], 1)
    return theta.unsqueeze(0).repeat(n, 1, 1)


def voxel_flow(n, out_size, voxels, gen):
    """The registration field as a displacement in voxels along (D, H, W): (N, 3, D, H, W)."""
    coarse = torch.randn(n, 3, 5, 5, 5, generator=gen) * voxels
    return F.interpolate(coarse, size=out_size, mode="trilinear", align_corners=True)


def input_and_output_size(grid, size):
    """(input size, output size) per axis for a grid kind at the benchmark's size S: the
    resampling grids keep the larger of the two at S."""
    if grid == "down2x":
        return size, size // 2
    if grid == "up2x":
        return size // 2, size
    return size, size


def make_grid(kind, n, out, seed=0):
    """The grid of `kind` for an output of out^3 points per batch item (fp32, contiguous)."""
    gen = torch.Generator().manual_seed(seed)
    size = (out, out, out)
    if kind in ("down2x", "up2x"):
        grid = identity(n, size)
    elif kind == "registration":
        grid = identity(n, size) + smooth_displacement(n, size, 3.0, gen)
    elif kind == "affine":
        grid = F.affine_grid(affine_theta(n), (n, 1, *size), align_corners=False)
    elif kind == "random":
        grid = torch.rand(n, *size, 3, generator=gen) * 2 - 1
    elif kind == "noise":
        grid = identity(n, size) + torch.randn(n, *size, 3, generator=gen) * 0.05
    else:
        raise ValueError(f"unknown grid {kind!r}; known: {', '.join(GRIDS)}")
    return grid.contiguous()


def make_problem(kind, n, c, size, channels_last, dtype=torch.float32, seed=0):
    """input, grid and gradOutput of one benchmark case, in `dtype`; input and gradOutput
    channels-last (NDHWC memory) when asked."""
    in_size, out_size = input_and_output_size(kind, size)
    gen = torch.Generator().manual_seed(seed + 1)
    inp = torch.rand(n, c, in_size, in_size, in_size, generator=gen) * 2 - 1
    grad = torch.rand(n, c, out_size, out_size, out_size, generator=gen) * 2 - 1
    grid = make_grid(kind, n, out_size, seed)
    if channels_last:
        inp = inp.contiguous(memory_format=torch.channels_last_3d)
        grad = grad.contiguous(memory_format=torch.channels_last_3d)
    return inp.to(dtype), grid.to(dtype), grad.to(dtype)
