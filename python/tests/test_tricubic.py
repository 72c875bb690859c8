"""mode="bicubic" on 5-D inputs: tricubic, PyTorch's 2-D bicubic convolution on three axes.

PyTorch has no 3-D bicubic to compare with, so its 2-D kernel is the arbiter: a volume
constant along one axis (each of the three in turn) must give PyTorch's 2-D result on the
other two, and its gradients: inputGrad summed along the constant axis, gridGrad's two other
components (the constant axis's one is the derivative of a constant, zero up to rounding).
Border and reflection pad each tap, so any coordinate on the constant axis gives the 2-D
result; with zeros its four taps must lie inside. Then gradcheck in double, the other dtypes
and layouts against float32/float64, hostile coordinates, the warps, patch_torch and NumPy.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import gridsampler3d
import gridsampler3d.numpy as gsn
from gridsampler3d._torch import TORCH_GRID_SAMPLE
from torch_reference import assert_matches

PADDINGS = ("zeros", "border", "reflection")
# The constant axis of the volume (0 D, 1 H, 2 W) -> the grid component it takes (z, y, x).
GRID_COMPONENT = {0: 2, 1: 1, 2: 0}


def constant_axis_case(axis, dtype, align, padding, seed=0):
    """(2-D image, 2-D grid, its volume, its 3-D grid): the volume repeats the image along
    `axis`; the 3-D grid's component on that axis is a fixed value whose four taps lie inside."""
    generator = torch.Generator().manual_seed(seed)
    image = torch.rand(2, 3, 7, 9, generator=generator, dtype=torch.float64).to(dtype)  # (N, C, H', W')
    grid2 = (torch.rand(2, 5, 6, 2, generator=generator, dtype=torch.float64) * 2.6 - 1.3).to(dtype)
    volume = image.unsqueeze(2 + axis).expand(*image.shape[:2 + axis], 6, *image.shape[2 + axis:]).contiguous()
    constant = torch.full((2, 5, 6, 1), 0.05 if padding == "zeros" else 1.7, dtype=dtype)
    # The 2-D grid's (x', y') address the image's (W', H'); the volume's other two axes, in
    # (D, H, W) order, are (H', W'): so x' goes to the later of the two, y' to the earlier.
    others = [a for a in (0, 1, 2) if a != axis]
    components = {GRID_COMPONENT[others[1]]: grid2[..., :1], GRID_COMPONENT[others[0]]: grid2[..., 1:],
                  GRID_COMPONENT[axis]: constant}
    grid3 = torch.cat([components[k] for k in (0, 1, 2)], dim=-1).unsqueeze(1)  # (N, 1, Ho, Wo, 3)
    return image, grid2, volume, grid3


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_constant_axis_gives_pytorchs_2d_bicubic(axis, padding, align, dtype):
    image, grid2, volume, grid3 = constant_axis_case(axis, dtype, align, padding)
    image.requires_grad_(), grid2.requires_grad_(), volume.requires_grad_(), grid3.requires_grad_()
    expected = TORCH_GRID_SAMPLE(image, grid2, mode="bicubic", padding_mode=padding, align_corners=align)
    out = gridsampler3d.grid_sample(volume, grid3, mode="bicubic", padding_mode=padding, align_corners=align)
    assert_matches(out.detach()[:, :, 0], expected.detach(), dtype, "output")
    weights = torch.rand(expected.shape, dtype=dtype)
    expected.backward(weights)
    out.backward(weights.unsqueeze(2))
    assert_matches(volume.grad.sum(dim=2 + axis), image.grad, dtype, "inputGrad summed along the constant axis")
    others = [a for a in (0, 1, 2) if a != axis]
    assert_matches(grid3.grad[:, 0, ..., GRID_COMPONENT[others[1]]], grid2.grad[..., 0], dtype, "gridGrad x'")
    assert_matches(grid3.grad[:, 0, ..., GRID_COMPONENT[others[0]]], grid2.grad[..., 1], dtype, "gridGrad y'")
    assert_matches(grid3.grad[:, 0, ..., GRID_COMPONENT[axis]], torch.zeros_like(grid2.grad[..., 0]), dtype,
                   "gridGrad along the constant axis")


@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
def test_gradcheck_in_double(padding, align):
    generator = torch.Generator().manual_seed(3)
    volume = torch.rand(1, 2, 4, 5, 6, generator=generator, dtype=torch.float64, requires_grad=True)
    grid = (torch.rand(1, 2, 3, 4, 3, generator=generator, dtype=torch.float64) * 2.6 - 1.3).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda v, g: gridsampler3d.grid_sample(v, g, mode="bicubic", padding_mode=padding, align_corners=align),
        (volume, grid), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types_round_the_float32_result(dtype):
    """fp16 and bf16 are computed in float32 and rounded once (the matrix checks the same in C++)."""
    generator = torch.Generator().manual_seed(4)
    volume = torch.rand(1, 2, 5, 6, 7, generator=generator).to(dtype)
    grid = (torch.rand(1, 3, 4, 5, 3, generator=generator) * 2.2 - 1.1).to(dtype)
    out = gridsampler3d.grid_sample(volume, grid, mode="bicubic", padding_mode="border")
    expected = gridsampler3d.grid_sample(volume.float(), grid.float(), mode="bicubic", padding_mode="border")
    assert_matches(out, expected, dtype, "output")


def test_layouts_give_the_same_values():
    generator = torch.Generator().manual_seed(5)
    volume = torch.rand(2, 3, 5, 6, 7, generator=generator)
    grid = torch.rand(2, 4, 5, 6, 3, generator=generator) * 2.4 - 1.2
    contiguous = gridsampler3d.grid_sample(volume, grid, mode="bicubic", padding_mode="reflection")
    channels_last = gridsampler3d.grid_sample(volume.to(memory_format=torch.channels_last_3d), grid, mode="bicubic",
                                              padding_mode="reflection")
    strided_grid = grid.transpose(1, 3).contiguous().transpose(1, 3)
    strided = gridsampler3d.grid_sample(volume, strided_grid, mode="bicubic", padding_mode="reflection")
    assert channels_last.is_contiguous(memory_format=torch.channels_last_3d)
    assert torch.equal(channels_last, contiguous) and torch.equal(strided, contiguous)


def test_nan_inf_and_huge_coordinates():
    volume = torch.rand(1, 1, 4, 4, 4, dtype=torch.float64)
    grid = torch.zeros(1, 1, 1, 5, 3, dtype=torch.float64)
    grid[0, 0, 0, :, 0] = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e300, 0.3], dtype=torch.float64)
    for padding in PADDINGS:
        out = gridsampler3d.grid_sample(volume, grid.clone().requires_grad_(), mode="bicubic", padding_mode=padding)
        assert torch.isnan(out[0, 0, 0, 0, :3]).all(), padding  # NaN fractions make NaN weights
        assert torch.isfinite(out[0, 0, 0, 0, 3:]).all(), padding
        if padding == "zeros":
            assert out[0, 0, 0, 0, 3] == 0  # every tap far outside


@pytest.mark.parametrize("padding", PADDINGS)
def test_affine_warp_is_grid_sample_on_the_affine_grid(padding):
    generator = torch.Generator().manual_seed(6)
    volume = torch.rand(2, 2, 6, 7, 8, generator=generator, dtype=torch.float64, requires_grad=True)
    theta = (torch.eye(3, 4, dtype=torch.float64) + 0.1 * torch.randn(2, 3, 4, generator=generator,
                                                                       dtype=torch.float64)).requires_grad_()
    size = (2, 2, 5, 6, 7)
    out = gridsampler3d.affine_warp(volume, theta, size, mode="bicubic", padding_mode=padding)
    grid = F.affine_grid(theta, list(size), align_corners=False)
    expected = gridsampler3d.grid_sample(volume, grid, mode="bicubic", padding_mode=padding)
    # F.affine_grid sums theta's products in another order than the warp: a few ulps apart
    assert torch.allclose(out, expected, rtol=0, atol=1e-12)
    weights = torch.rand(size, generator=generator, dtype=torch.float64)
    ours = torch.autograd.grad(out, (volume, theta), weights)
    theirs = torch.autograd.grad(expected, (volume, theta), weights)
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-10)


def test_displacement_warp_is_grid_sample_on_the_flow_grid():
    generator = torch.Generator().manual_seed(7)
    volume = torch.rand(1, 1, 6, 7, 8, generator=generator, dtype=torch.float64)
    flow = torch.randn(1, 3, 6, 7, 8, generator=generator, dtype=torch.float64)
    out = gridsampler3d.displacement_warp(volume, flow, mode="bicubic", padding_mode="border")
    axes = [torch.arange(s, dtype=torch.float64) for s in flow.shape[2:]]
    positions = torch.stack(torch.meshgrid(*axes, indexing="ij")).unsqueeze(0) + flow
    normalised = torch.stack([2 * (positions[:, i] / (flow.shape[2 + i] - 1) - 0.5) for i in range(3)], dim=1)
    grid = normalised.permute(0, 2, 3, 4, 1)[..., [2, 1, 0]]
    expected = gridsampler3d.grid_sample(volume, grid, mode="bicubic", padding_mode="border", align_corners=True)
    assert torch.allclose(out, expected, rtol=0, atol=1e-12)


def test_patch_torch_routes_5d_bicubic_only():
    volume, grid = torch.rand(1, 1, 4, 5, 6), torch.rand(1, 2, 3, 4, 3) * 2 - 1
    with gridsampler3d.patch_torch():
        routed = F.grid_sample(volume, grid, mode="bicubic", align_corners=False)
        image, grid2 = torch.rand(1, 1, 5, 6), torch.rand(1, 3, 4, 2) * 2 - 1
        two_d = F.grid_sample(image, grid2, mode="bicubic", align_corners=False)
    assert torch.equal(routed, gridsampler3d.grid_sample(volume, grid, mode="bicubic"))
    assert torch.equal(two_d, TORCH_GRID_SAMPLE(image, grid2, mode="bicubic", align_corners=False))


def test_numpy_front_end():
    rng = np.random.default_rng(8)
    volume, grid = rng.random((1, 2, 4, 5, 6)), rng.random((1, 3, 3, 4, 3)) * 2 - 1
    out = gsn.grid_sample(volume, grid, mode="bicubic", padding_mode="border")
    expected = gridsampler3d.grid_sample(torch.from_numpy(volume), torch.from_numpy(grid), mode="bicubic",
                                         padding_mode="border")
    assert np.array_equal(out, expected.numpy())


def test_create_graph_is_refused_with_a_reason():
    volume = torch.rand(1, 1, 4, 4, 4, dtype=torch.float64, requires_grad=True)
    grid = (torch.rand(1, 2, 2, 2, 3, dtype=torch.float64) * 2 - 1).requires_grad_()
    out = gridsampler3d.grid_sample(volume, grid, mode="bicubic")
    with pytest.raises(RuntimeError, match="no 3-D bicubic"):
        torch.autograd.grad(out.sum(), (volume, grid), create_graph=True)
