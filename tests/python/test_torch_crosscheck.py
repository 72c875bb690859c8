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

from aclnn_ctypes import Session

SESSION = Session()

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
CASES = list(itertools.product([0, 1], [0, 1, 2], [False, True], DTYPES, [False, True], range(3)))


def reference(inp, grid, grad, mode, padding, align, dtype):
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    i, g, go = (t.to(compute) for t in (inp, grid, grad))
    out = torch.ops.aten.grid_sampler_3d(i, g, mode, padding, align)
    input_grad, grid_grad = torch.ops.aten.grid_sampler_3d_backward(go, i, g, mode, padding, align, [True, True])
    return out, input_grad, grid_grad


def tolerance(expected, dtype):
    """Per-element bound on |ours - reference|, with the reason:
    fp32/fp64: the same operations in the same order, so equal up to a few ulps where the
    compiler contracts a*b+c into an FMA; 64 ulps of the tensor's largest magnitude bounds it.
    fp16/bf16: both sides round the fp32 result once; a difference of the fp32 results that
    straddles a rounding boundary moves one ulp of the dtype, plus the fp32 allowance."""
    finite = expected[torch.isfinite(expected)].to(torch.float64).abs()
    scale = max(1.0, finite.max().item()) if finite.numel() else 1.0
    if dtype == torch.float64:
        return torch.full_like(expected, 64 * 2.0 ** -52 * scale, dtype=torch.float64)
    fp32 = 64 * 2.0 ** -23 * scale
    if dtype == torch.float32:
        return torch.full_like(expected, fp32, dtype=torch.float64)
    mantissa_bits = 10 if dtype == torch.float16 else 7
    magnitude = expected.to(torch.float64).abs().clamp(min=2.0 ** -24)
    ulp = torch.pow(2.0, torch.floor(torch.log2(magnitude)) - mantissa_bits)
    return ulp + fp32


def assert_matches(ours, expected, dtype, what):
    ours = ours.to(torch.float64)
    expected = expected.to(dtype).to(torch.float64)  # the reference rounded once to the dtype
    nan_ours, nan_expected = torch.isnan(ours), torch.isnan(expected)
    assert torch.equal(nan_ours, nan_expected), f"{what}: NaN positions differ"
    inf = torch.isinf(expected)
    assert torch.equal(ours[inf], expected[inf]), f"{what}: inf values differ"
    keep = ~(nan_expected | inf)
    diff = (ours[keep] - expected[keep]).abs()
    bound = tolerance(expected, dtype)[keep]
    bad = diff > bound
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {diff.numel()} differ; worst "
                           f"{(diff - bound).max().item():.3g} over the bound")


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


TORCH_ROUNDS_3D_TIES_AWAY = tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 1)


def source_index(coord, size, padding, align):
    """The padded source index, in the dtype the kernels compute in, for finding ties only."""
    coord = ((coord + 1) / 2) * (size - 1) if align else ((coord + 1) * size - 1) / 2
    if padding == 2:
        low, high = (0.0, 2.0 * (size - 1)) if align else (-1.0, 2.0 * size - 1)
        if low == high:
            return torch.zeros_like(coord)
        minimum, span = low / 2, (high - low) / 2
        value = (coord - minimum).abs()
        extra = torch.fmod(value, span)
        flips = torch.floor(value / span)
        coord = torch.where(torch.fmod(flips, 2) == 0, extra + minimum, span - extra + minimum)
    if padding in (1, 2):
        coord = coord.clamp(0, size - 1)
    return coord


def tie_points(inp, grid, padding, align):
    """(N, Do, Ho, Wo) mask of grid points whose index is exactly k + 0.5 on some axis."""
    compute = torch.float64 if grid.dtype == torch.float64 else torch.float32
    g = grid.to(compute)
    sizes = (inp.shape[4], inp.shape[3], inp.shape[2])  # x: W, y: H, z: D
    ties = torch.zeros(grid.shape[:4], dtype=torch.bool)
    for axis, size in enumerate(sizes):
        index = source_index(g[..., axis], size, padding, align)
        ties |= (index - torch.floor(index)) == 0.5
    return ties


def run_ours(inp, grid, grad, mode, padding, align, channel_last):
    n, c, d, h, w = inp.shape
    od, oh, ow = grid.shape[1:4]
    if channel_last:
        to_cl = lambda t: t.permute(0, 2, 3, 4, 1).contiguous()
        inp_g, grad_g = to_cl(inp), to_cl(grad)
        out = torch.full((n, od, oh, ow, c), 123.0, dtype=inp.dtype)
        input_grad = torch.full((n, d, h, w, c), 123.0, dtype=inp.dtype)
    else:
        # A strided (non-contiguous) input view exercises arbitrary strides.
        big = torch.zeros(n, c, d, h, 2 * w, dtype=inp.dtype)
        big[..., ::2] = inp
        inp_g, grad_g = big[..., ::2], grad
        out = torch.full((n, c, od, oh, ow), 123.0, dtype=inp.dtype)
        input_grad = torch.full((n, c, d, h, w), 123.0, dtype=inp.dtype)
    grid_grad = torch.full(grid.shape, 123.0, dtype=inp.dtype)
    SESSION.forward(inp_g, grid, out, mode, padding, align, channel_last)
    SESSION.backward(grad_g, inp_g, grid, input_grad, grid_grad, mode, padding, align, channel_last=channel_last)
    if channel_last:
        out, input_grad = out.permute(0, 4, 1, 2, 3), input_grad.permute(0, 4, 1, 2, 3)
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
        out = torch.zeros(1, 1, 1, 1, 1)
        SESSION.forward(inp, grid, out, 1, 0, False)
        assert out.item() == even
        torch_value = torch.ops.aten.grid_sampler_3d(inp, grid, 1, 0, False).item()
        assert torch_value == (away if TORCH_ROUNDS_3D_TIES_AWAY else even)
        assert torch.ops.aten.grid_sampler_2d(inp[:, :, 0], grid[:, 0, :, :, :2], 1, 0, False).item() == even


def test_seed_sample_values():
    """The seed's sample program's inputs, through the API, equal PyTorch exactly."""
    inp = torch.arange(1.0, 10.0).reshape(1, 1, 1, 3, 3)
    grid = torch.tensor([-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0.0]).reshape(1, 1, 2, 2, 3)
    grad = torch.ones(1, 1, 1, 2, 2)
    input_grad, grid_grad = torch.zeros(1, 1, 1, 3, 3), torch.zeros(1, 1, 2, 2, 3)
    SESSION.backward(grad, inp, grid, input_grad, grid_grad, 0, 0, False)
    expected = torch.ops.aten.grid_sampler_3d_backward(grad, inp, grid, 0, 0, False, [True, True])
    assert torch.equal(input_grad, expected[0])
    assert torch.equal(grid_grad, expected[1])
