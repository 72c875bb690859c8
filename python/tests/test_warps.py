"""affine_warp and displacement_warp against their compositions.

The reference samples PyTorch's CPU kernels at the warp's coordinates computed here
independently: for theta, F.affine_grid's base coordinates (PyTorch's linspace formula in the
dtype) times theta in float64, rounded once to the dtype (PyTorch's own F.affine_grid sums
the product in the dtype, a few ulps away: checked separately); for a flow, VoxelMorph's
SpatialTransformer arithmetic in the compute dtype. thetaGrad's reference is the reference
gridGrad times the base coordinates, summed in float64. Outputs are (66, 2, 1000) points,
four chunks of the library's workspace (full and partial), so that sums across chunks are
checked; C = 4 with NCDHW takes the channels-last backward. fp16/bf16: the fp32 kernel on the upcast values, as in
test_torch_crosscheck. Nearest: the points near a tie are left out (near_ties).
"""
import itertools

import pytest
import torch
import torch.nn.functional as F

import gridsampler3d
from gridsampler3d import _runtime, _warp_torch
from torch_reference import assert_matches, reference, source_index

MODES, PADDINGS = ("bilinear", "nearest"), ("zeros", "border", "reflection")
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
OUT = (66, 2, 1000)  # four chunks of the library's 65536 points: each row's 65 planes, then 1


def compute_dtype(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def base_grid(dtype, size, align):
    """F.affine_grid's base coordinates (x, y, z, 1) of (D, H, W), in float64."""
    def axis(steps):
        if steps <= 1:
            return torch.zeros(steps, dtype=torch.float64)
        # linspace(-1, 1, steps) from both ends, as PyTorch's scalar loop computes it (its
        # vector loop, used for most elements, differs in the last bit by vector width).
        index = torch.arange(steps, dtype=compute_dtype(dtype))
        step = torch.tensor(2, dtype=index.dtype) / (steps - 1)
        values = torch.where(index < steps // 2, -1 + step * index, 1 - step * (steps - 1 - index))
        if not align:
            values = values * (steps - 1) / steps
        return values.to(torch.float64)
    d, h, w = size
    z, y, x = torch.meshgrid(axis(d), axis(h), axis(w), indexing="ij")
    return torch.stack((x, y, z, torch.ones_like(x)), dim=-1)


def affine_grid(theta, size, align):
    """(N, D, H, W, 3): the base coordinates times theta in float64, rounded to the compute
    dtype, then to theta's (as the library rounds them)."""
    base = base_grid(theta.dtype, size, align)
    exact = torch.einsum("dhwk,nck->ndhwc", base, theta.to(torch.float64))
    return exact.to(compute_dtype(theta.dtype)).to(theta.dtype)


def flow_grid(flow):
    """VoxelMorph's normalized coordinates of a flow (N, 3, D, H, W), in the compute dtype,
    rounded to the flow's dtype."""
    f = flow.to(compute_dtype(flow.dtype))
    shape = flow.shape[2:]
    axes = [torch.arange(0, s, dtype=f.dtype) for s in shape]
    locations = torch.stack(torch.meshgrid(*axes, indexing="ij")).unsqueeze(0) + f
    normalized = torch.stack([2 * (locations[:, i] / (shape[i] - 1) - 0.5) for i in range(3)], dim=1)
    return normalized.permute(0, 2, 3, 4, 1)[..., [2, 1, 0]].to(flow.dtype)


def make_case(seed, kind, dtype, channels, channels_last):
    gen = torch.Generator().manual_seed(seed)
    inp = torch.rand(2, channels, 6, 7, 9, generator=gen, dtype=torch.float64) * 2 - 1
    if kind == "affine":
        rotation = torch.eye(3, 4, dtype=torch.float64) + 0.3 * torch.randn(2, 3, 4, generator=gen, dtype=torch.float64)
        parameters = rotation * 1.2  # some points outside the volume, for the padding
    else:
        parameters = torch.randn(2, 3, *OUT, generator=gen, dtype=torch.float64) * 3
    grad = torch.rand(2, channels, *OUT, generator=gen, dtype=torch.float64) * 2 - 1
    inp, parameters, grad = inp.to(dtype), parameters.to(dtype), grad.to(dtype)
    if channels_last:
        inp = inp.contiguous(memory_format=torch.channels_last_3d)
    return inp, parameters, grad


def near_ties(inp, grid, padding, align):
    """(N, Do, Ho, Wo) mask of the points whose source index is within a few ulps of the
    coordinates (times the size) of k + 0.5 on some axis. Nearest rounds there one way or the
    other as the last bit of the coordinate falls, and the coordinates here and the library's
    may differ in that bit (a sum in another order); PyTorch 1.13 also rounds exact ties away
    from zero where the library rounds them to even (test_torch_crosscheck)."""
    mantissa = {torch.float32: 23, torch.float64: 52, torch.float16: 10, torch.bfloat16: 7}[grid.dtype]
    g = grid.to(torch.float64)
    near = torch.zeros(grid.shape[:4], dtype=torch.bool)
    for axis, size in enumerate((inp.shape[4], inp.shape[3], inp.shape[2])):
        index = source_index(g[..., axis], size, padding, align)
        near |= ((index - torch.floor(index)) - 0.5).abs() <= 16 * 2.0 ** -mantissa * size
    return near


CASES = ([("affine",) + c for c in itertools.product(MODES, PADDINGS, [False, True], DTYPES, [1, 4], [False, True])]
         + [("displacement",) + c for c in itertools.product(MODES, PADDINGS, [True], DTYPES, [1, 4], [False, True])])


@pytest.mark.parametrize("kind,mode,padding,align,dtype,channels,channels_last", CASES)
def test_warp_matches_composition(kind, mode, padding, align, dtype, channels, channels_last):
    seed = CASES.index((kind, mode, padding, align, dtype, channels, channels_last))
    inp, parameters, grad = make_case(seed, kind, dtype, channels, channels_last)
    m, p = MODES.index(mode), PADDINGS.index(padding)
    grid = affine_grid(parameters, OUT, align) if kind == "affine" else flow_grid(parameters)
    keep = torch.ones((2, 1) + OUT, dtype=torch.bool)
    if mode == "nearest":  # the near ties' points left out, their gradOutput zeroed
        keep = (~near_ties(inp, grid, p, align))[:, None]
        grad = grad * keep.to(grad.dtype)
    keep = keep.expand(2, channels, *OUT)
    out_ref, input_grad_ref, grid_grad_ref = reference(inp, grid, grad, m, p, align, dtype)

    x = inp.clone().requires_grad_()
    w = parameters.clone().requires_grad_()
    if kind == "affine":
        out = gridsampler3d.affine_warp(x, w, (2, channels) + OUT, mode, padding, align)
    else:
        out = gridsampler3d.displacement_warp(x, w, mode, padding)
    assert out.shape == (2, channels) + OUT and out.dtype == dtype
    if channels > 1:  # one channel is dense in both layouts
        assert out.is_contiguous(memory_format=torch.channels_last_3d) == channels_last
    assert_matches(torch.where(keep, out, torch.zeros_like(out)), torch.where(keep, out_ref, torch.zeros_like(out_ref)),
                   dtype, "out")
    input_grad, parameters_grad = torch.autograd.grad(out, (x, w), grad)
    assert_matches(input_grad, input_grad_ref, dtype, "inputGrad")
    g = grid_grad_ref.to(torch.float64)
    if kind == "affine":
        terms = torch.einsum("ndhwc,dhwk->ndhwck", g, base_grid(dtype, OUT, align))
        expected = terms.sum(dim=(1, 2, 3))
        # gridGrad is rounded to the dtype per point before the sum (the chunk's buffer):
        # half an ulp of each term, plus the reference's rounding to the dtype.
        eps = {torch.float32: 2.0 ** -24, torch.float64: 2.0 ** -53, torch.float16: 2.0 ** -11,
               torch.bfloat16: 2.0 ** -8}[dtype]
        bound = eps * terms.abs().sum(dim=(1, 2, 3)) * 2 + expected.abs() * eps * 2 + 1e-300
        diff = (parameters_grad.to(torch.float64) - expected).abs()
        assert (diff <= bound).all(), f"thetaGrad: {(diff - bound).max().item():.3g} over the bound"
    else:
        sizes = torch.tensor(OUT, dtype=torch.float64)  # (D, H, W): flow channels 0, 1, 2
        expected = (2 * g[..., [2, 1, 0]] / (sizes - 1)).permute(0, 4, 1, 2, 3)
        assert_matches(parameters_grad, expected, dtype, "flowGrad")


def test_affine_coordinates_are_torchs_within_a_few_ulps():
    theta = torch.eye(3, 4) + 0.3 * torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(5))
    for align in (False, True):
        ours = affine_grid(theta, OUT, align)
        torchs = F.affine_grid(theta, [2, 1, *OUT], align_corners=align)
        assert (ours - torchs).abs().max().item() <= 8 * 2.0 ** -23 * 2


@pytest.mark.parametrize("padding,align", itertools.product(PADDINGS, [False, True]))
def test_gradcheck_double(padding, align):
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(1, 2, 4, 5, 6, generator=gen, dtype=torch.float64, requires_grad=True)
    theta = (torch.eye(3, 4, dtype=torch.float64) + 0.2 * torch.randn(1, 3, 4, generator=gen, dtype=torch.float64))
    theta.requires_grad_()
    size = (1, 2, 3, 4, 5)
    assert torch.autograd.gradcheck(lambda a, t: gridsampler3d.affine_warp(a, t, size, "bilinear", padding, align),
                                    (x, theta))
    flow = (torch.randn(1, 3, 3, 4, 5, generator=gen, dtype=torch.float64) * 0.7).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, f: gridsampler3d.displacement_warp(a, f, "bilinear", padding), (x, flow))
    assert torch.autograd.gradcheck(lambda a: gridsampler3d.displacement_warp(a, flow.detach(), "nearest", padding),
                                    (x,))


def test_theta_gradient_is_the_same_for_any_thread_count():
    inp, theta, grad = make_case(3, "affine", torch.float32, 1, False)
    results = []
    try:
        for threads in (1, 2, 3):
            gridsampler3d.set_num_threads(threads)
            w = theta.clone().requires_grad_()
            x = inp.clone().requires_grad_()
            out = gridsampler3d.affine_warp(x, w, (2, 1) + OUT)
            results.append(torch.autograd.grad(out, (x, w), grad))
    finally:
        gridsampler3d.set_num_threads(0)
    for other in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(results[0], other))


def test_workspace_holds_a_chunk_not_the_grid():
    inp = torch.rand(1, 1, 8, 8, 8)
    theta = torch.eye(3, 4)[None]
    out = torch.empty(1, 1, 64, 128, 128)
    view = _warp_torch._view
    workspace = _runtime.warp_forward("affine", view(inp, "input"), view(theta, "theta"), view(out, "out"), 0, 0, False)
    grid_bytes = 64 * 128 * 128 * 3 * 4
    assert 0 < workspace <= grid_bytes // 8


def test_bad_arguments_are_refused_with_a_message():
    x = torch.rand(1, 1, 4, 4, 4)
    with pytest.raises(ValueError, match="theta of shape"):
        gridsampler3d.affine_warp(x, torch.eye(3, 3)[None])
    with pytest.raises(ValueError, match="size"):
        gridsampler3d.affine_warp(x, torch.eye(3, 4)[None], size=(2, 1, 4, 4, 4))
    with pytest.raises(gridsampler3d.GridSamplerError, match="at least 2"):
        gridsampler3d.displacement_warp(x, torch.zeros(1, 3, 1, 4, 4))
    with pytest.raises(gridsampler3d.GridSamplerError, match="flow has shape"):
        gridsampler3d.displacement_warp(x, torch.zeros(1, 2, 4, 4, 4))
    with pytest.raises(gridsampler3d.GridSamplerError, match="dtype"):
        gridsampler3d.affine_warp(x, torch.eye(3, 4, dtype=torch.float64)[None])


@pytest.mark.parametrize("kind", ["affine", "displacement"])
def test_numpy_counterparts_equal_the_torch_calls(kind):
    import numpy as np
    from gridsampler3d import numpy as gnp
    inp, parameters, grad = make_case(7, kind, torch.float32, 2, False)
    x, w = inp.clone().requires_grad_(), parameters.clone().requires_grad_()
    if kind == "affine":
        out = gridsampler3d.affine_warp(x, w, (2, 2) + OUT, "bilinear", "border", True)
        out_np = gnp.affine_warp(inp.numpy(), parameters.numpy(), (2, 2) + OUT, "bilinear", "border", True)
        grads_np = gnp.affine_warp_backward(grad.numpy(), inp.numpy(), parameters.numpy(), "bilinear", "border", True)
        none_np = gnp.affine_warp_backward(grad.numpy(), inp.numpy(), parameters.numpy(), output_mask=(False, True))
    else:
        out = gridsampler3d.displacement_warp(x, w, "bilinear", "border")
        out_np = gnp.displacement_warp(inp.numpy(), parameters.numpy(), "bilinear", "border")
        grads_np = gnp.displacement_warp_backward(grad.numpy(), inp.numpy(), parameters.numpy(), "bilinear", "border")
        none_np = gnp.displacement_warp_backward(grad.numpy(), inp.numpy(), parameters.numpy(), output_mask=(False, True))
    grads = torch.autograd.grad(out, (x, w), grad)
    assert np.array_equal(out_np, out.detach().numpy())
    assert all(np.array_equal(a, b.numpy()) for a, b in zip(grads_np, grads))
    assert none_np[0] is None and none_np[1].shape == parameters.shape
