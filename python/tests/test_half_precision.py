"""fp16 and bf16 compute in fp32 and round once (docs/semantics.md): on the same values, their
results are bit for bit our fp32 results rounded to the dtype. Rows of 70 points in a packed
grid and a contiguous one-channel input, so that the row phases' vector loads and stores of
fp16 and bf16 grid values (whole vectors and a rest) are the path taken, in every padding."""
import pytest
import torch

import gridsampler3d

PADDINGS = ("zeros", "border", "reflection")


def smooth_case(dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    n, c, d, h, w, od, oh, ow = 2, 1, 9, 8, 72, 5, 6, 70
    z, y, x = torch.meshgrid(*[(2 * torch.arange(s, dtype=torch.float64) + 1) / s - 1 for s in (od, oh, ow)],
                             indexing="ij")
    grid = torch.stack([1.1 * x + 0.05 * torch.sin(3 * y), y + 0.04 * torch.cos(2 * x), z + 0.03 * torch.sin(x + y)], -1)
    grid = grid.expand(n, od, oh, ow, 3) + torch.rand(n, od, oh, ow, 3, generator=gen, dtype=torch.float64) * 0.02
    inp = torch.rand(n, c, d, h, w, generator=gen, dtype=torch.float64) * 2 - 1
    grad = torch.rand(n, c, od, oh, ow, generator=gen, dtype=torch.float64) * 2 - 1
    return inp.to(dtype), grid.to(dtype).contiguous(), grad.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
def test_half_types_are_fp32_rounded_once(dtype, padding, align):
    inp, grid, grad = smooth_case(dtype, 7)
    out = gridsampler3d.grid_sample(inp, grid, "bilinear", padding, align)
    input_grad, grid_grad = gridsampler3d.grid_sample_backward(grad, inp, grid, "bilinear", padding, align)
    wide = [t.to(torch.float32) for t in (inp, grid, grad)]
    out32 = gridsampler3d.grid_sample(wide[0], wide[1], "bilinear", padding, align)
    input_grad32, grid_grad32 = gridsampler3d.grid_sample_backward(wide[2], wide[0], wide[1], "bilinear", padding,
                                                                   align)
    for what, ours, rounded in (("forward", out, out32), ("inputGrad", input_grad, input_grad32),
                                ("gridGrad", grid_grad, grid_grad32)):
        rounded = rounded.to(dtype)
        same = (ours.view(torch.int16) == rounded.view(torch.int16))
        assert bool(same.all()), f"{what}: {int((~same).sum())} of {same.numel()} differ from fp32 rounded once"
