"""PyTorch's CPU kernels as the reference of values, and the bound on how far ours may be from
them, shared by the cross-check and the package's tests."""
import torch


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
