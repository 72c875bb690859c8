"""PyTorch, the arbiter of values: our forward and backward against
torch.ops.aten.grid_sampler_3d and grid_sampler_3d_backward (PyTorch's CPU kernels) over
random cases of every mode, padding, alignCorners, dtype and layout, CANN-test-like: sizes up
to 9 per dim, values up to 100 in magnitude, grids far outside [-1, 1], and cases whose input,
grid or gradOutput is filled with inf, -inf or NaN.

fp16 and bf16 have no CPU kernel in PyTorch 1.13: as CANN's own golden does, the reference is
the fp32 kernel on the upcast inputs, rounded once to the dtype.

Nearest ties: PyTorch before 2.1 rounds an index of exactly k + 0.5 half away from zero in its
3-D CPU kernel (std::round; its 2-D and CUDA kernels, and every version since pytorch#97000,
round half to even). We round half to even. So in nearest mode the grid points with a tie on
some axis are left out of the comparison (their gradOutput is zeroed on both sides);
test_nearest_tie_rounding pins the difference down, and the C++ reference tests check ties.
"""
import itertools
import math
import zlib

import pytest
import torch

import gridsampler3d
from torch_reference import TORCH_ROUNDS_3D_TIES_AWAY, assert_matches, reference, tie_points

MODES, PADDINGS = ("bilinear", "nearest"), ("zeros", "border", "reflection")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
CASES = list(itertools.product([0, 1], [0, 1, 2], [False, True], DTYPES, [False, True], range(3)))


def make_case(seed, dtype, special):
    gen = torch.Generator().manual_seed(seed)
    n, c = [int(v) for v in torch.randint(1, 4, (2,), generator=gen)]
    d, h, w = [int(v) for v in torch.randint(1, 10, (3,), generator=gen)]
    od, oh, ow = [int(v) for v in torch.randint(1, 7, (3,), generator=gen)]
    inp = (torch.rand(n, c, d, h, w, generator=gen, dtype=torch.float64) * 200 - 100)
    scale = [1.0, 1.5, 4.0][seed % 3]  # grids inside, around and far outside [-1, 1]
    grid = (torch.rand(n, od, oh, ow, 3, generator=gen, dtype=torch.float64) * 2 - 1) * scale
    grid.view(-1)[:: 7] = torch.tensor([-1.0, 1.0, 0.0]).repeat(grid.numel() // 21 + 1)[: grid.view(-1)[::7].numel()]
    grad = torch.rand(n, c, od, oh, ow, generator=gen, dtype=torch.float64) * 200 - 100
    if special:
        target = [inp, grid, grad][seed % 3]
        fill = [math.inf, -math.inf, math.nan][(seed // 3) % 3]
        flat = target.view(-1)
        flat[torch.randperm(flat.numel(), generator=gen)[: max(1, flat.numel() // 3)]] = fill
    return inp.to(dtype), grid.to(dtype), grad.to(dtype)


def run_ours(inp, grid, grad, mode, padding, align, channel_last):
    """Through the package, which passes the tensors as they are: a channels-last input, or a
    strided (non-contiguous) view of a wider one, reaches the C library without a copy."""
    if channel_last:
        to_cl = lambda t: t.contiguous(memory_format=torch.channels_last_3d)
        inp_g, grad_g = to_cl(inp), to_cl(grad)
    else:
        big = torch.zeros(*inp.shape[:4], 2 * inp.shape[4], dtype=inp.dtype)
        big[..., ::2] = inp
        inp_g, grad_g = big[..., ::2], grad
    out = gridsampler3d.grid_sample(inp_g, grid, MODES[mode], PADDINGS[padding], align)
    input_grad, grid_grad = gridsampler3d.grid_sample_backward(grad_g, inp_g, grid, MODES[mode], PADDINGS[padding],
                                                               align)
    return out, input_grad, grid_grad


@pytest.mark.parametrize("mode,padding,align,dtype,channel_last,repeat", CASES)
def test_matches_pytorch(mode, padding, align, dtype, channel_last, repeat):
    seed = zlib.crc32(repr((mode, padding, align, str(dtype), channel_last, repeat)).encode())
    special = repeat == 2  # one case in three holds inf, -inf or NaN
    inp, grid, grad = make_case(seed, dtype, special)
    keep = torch.ones(grid.shape[:4], dtype=torch.bool)
    if mode == 1 and TORCH_ROUNDS_3D_TIES_AWAY:
        keep = ~tie_points(inp, grid, padding, align)
        grad = grad.clone()
        grad[~keep[:, None].expand_as(grad)] = 0  # ties scatter nothing on either side
    expected = reference(inp, grid, grad, mode, padding, align, dtype)
    ours = run_ours(inp, grid, grad, mode, padding, align, channel_last)
    points = keep[:, None].expand_as(expected[0])
    assert_matches(ours[0][points], expected[0][points], dtype, "forward")
    assert_matches(ours[1], expected[1], dtype, "inputGrad")
    assert_matches(ours[2], expected[2], dtype, "gridGrad")


def test_nearest_tie_rounding():
    """An index of exactly 0.5 or 2.5: ours picks the even voxel (0, 2) as PyTorch 2.1+ and
    every 2-D kernel do; PyTorch 1.13's 3-D CPU kernel picks 1 and 3."""
    inp = torch.arange(4.0).reshape(1, 1, 1, 1, 4)
    for g, even, away in ((-0.5, 0.0, 1.0), (0.5, 2.0, 3.0)):
        grid = torch.tensor([g, 0.0, 0.0]).reshape(1, 1, 1, 1, 3)
        assert gridsampler3d.grid_sample(inp, grid, "nearest").item() == even
        torch_value = torch.ops.aten.grid_sampler_3d(inp, grid, 1, 0, False).item()
        assert torch_value == (away if TORCH_ROUNDS_3D_TIES_AWAY else even)
        assert torch.ops.aten.grid_sampler_2d(inp[:, :, 0], grid[:, 0, :, :, :2], 1, 0, False).item() == even


def test_seed_sample_values():
    """The seed's sample program's inputs, through the API, equal PyTorch exactly."""
    inp = torch.arange(1.0, 10.0).reshape(1, 1, 1, 3, 3)
    grid = torch.tensor([-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0.0]).reshape(1, 1, 2, 2, 3)
    grad = torch.ones(1, 1, 1, 2, 2)
    input_grad, grid_grad = gridsampler3d.grid_sample_backward(grad, inp, grid)
    expected = torch.ops.aten.grid_sampler_3d_backward(grad, inp, grid, 0, 0, False, [True, True])
    assert torch.equal(input_grad, expected[0])
    assert torch.equal(grid_grad, expected[1])
