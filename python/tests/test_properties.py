"""Property-based tests of the Python layer (Hypothesis): grid_sample, grid_sample_backward,
affine_warp, displacement_warp, the NumPy front end and patch_torch against PyTorch, on random
shapes (empty and size-1 axes included), layouts and views (channels-last, transposed,
expanded, negative-stride NumPy arrays), dtypes, modes, paddings and alignments, with hostile
values (NaN, inf, huge coordinates) and hostile arguments (mismatched shapes and dtypes).

Hypothesis draws the structure (shapes, layout, options, where the hostile values go) and a
seed; the values come from NumPy's generator with that seed, so that they are random reals
(nearest-mode ties, where PyTorch 1.13 rounds away from zero and the library to even, are
then of probability zero and are still left out by tie_points).

Bounded for the test suite: the "ci" profile (the default) runs each property on a few dozen
examples; HYPOTHESIS_PROFILE=long runs thousands (docs/testing.md).
"""
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gridsampler3d
import gridsampler3d._patch
import gridsampler3d.numpy as gsn
from torch_reference import assert_matches, reference, tie_points

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

MODES, PADDINGS = ("bilinear", "nearest"), ("zeros", "border", "reflection")
TORCH_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
HOSTILE = (float("nan"), float("inf"), float("-inf"), 1e30, -1e30, 3e9)

sizes = st.integers(1, 5)
out_sizes = st.integers(0, 4)


@st.composite
def problems(draw, dtypes=TORCH_DTYPES):
    """A grid_sample problem: tensors, options and how they are laid out."""
    n, c = draw(st.integers(0, 2)), draw(st.integers(1, 5))
    d, h, w = draw(sizes), draw(sizes), draw(sizes)
    do, ho, wo = draw(out_sizes), draw(out_sizes), draw(out_sizes)
    dtype = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    inp = torch.from_numpy(rng.uniform(-3, 3, (n, c, d, h, w))).to(dtype)
    grid = torch.from_numpy(rng.uniform(-1.4, 1.4, (n, do, ho, wo, 3))).to(dtype)
    grad = torch.from_numpy(rng.uniform(-1, 1, (n, c, do, ho, wo))).to(dtype)
    hostile = draw(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(HOSTILE)), max_size=3))
    if grid.numel():
        flat = grid.view(-1)
        for at, value in hostile:
            flat[at % flat.numel()] = value
    layout = draw(st.sampled_from(("contiguous", "channels_last", "transposed", "expanded")))
    if layout == "channels_last":
        inp = inp.contiguous(memory_format=torch.channels_last_3d)
        grad = grad.contiguous(memory_format=torch.channels_last_3d)
    elif layout == "transposed":  # strides of a (W, H) transposed copy, viewed back
        inp = inp.transpose(3, 4).contiguous().transpose(3, 4)
        grid = grid.transpose(1, 3).contiguous().transpose(1, 3)
    elif layout == "expanded" and c > 1:  # every channel one stride-0 plane
        inp = inp[:, :1].expand(n, c, d, h, w)
    options = (draw(st.sampled_from(MODES)), draw(st.sampled_from(PADDINGS)), draw(st.booleans()))
    return inp, grid, grad, options


def without_ties(inp, grid, options):
    mode, padding, align = options
    if mode == "nearest" and grid.numel():
        assume(not tie_points(inp, grid, PADDINGS.index(padding), align).any())


@given(problems())
def test_forward_and_backward_match_pytorch(problem):
    inp, grid, grad, options = problem
    without_ties(inp, grid, options)
    mode, padding, align = options
    expected = reference(inp, grid, grad, MODES.index(mode), PADDINGS.index(padding), align, inp.dtype)
    out = gridsampler3d.grid_sample(inp, grid, mode, padding, align)
    input_grad, grid_grad = gridsampler3d.grid_sample_backward(grad, inp, grid, mode, padding, align)
    for what, ours, e in zip(("forward", "input grad", "grid grad"), (out, input_grad, grid_grad), expected):
        assert ours.shape == e.shape and ours.dtype == inp.dtype, what
        assert_matches(ours, e, inp.dtype, what)


@given(problems(dtypes=(torch.float32, torch.float64)), st.sampled_from(((True, False), (False, True))))
def test_output_mask_leaves_gradients_out(problem, mask):
    inp, grid, grad, options = problem
    without_ties(inp, grid, options)
    mode, padding, align = options
    expected = reference(inp, grid, grad, MODES.index(mode), PADDINGS.index(padding), align, inp.dtype)
    ours = gridsampler3d.grid_sample_backward(grad, inp, grid, mode, padding, align, output_mask=mask)
    for wanted, got, e in zip(mask, ours, expected[1:]):
        if wanted:
            assert_matches(got, e, inp.dtype, "masked backward")
        else:
            assert got is None


@given(problems(dtypes=(torch.float32, torch.float64)), st.booleans())
def test_numpy_front_end_on_any_view(problem, reversed_w):
    inp, grid, grad, options = problem
    without_ties(inp, grid, options)
    mode, padding, align = options
    a, g, go = (t.numpy() for t in (inp, grid, grad))
    if reversed_w:  # negative strides: a reversed view of a reversed copy holds the same values
        a = np.ascontiguousarray(a[..., ::-1])[..., ::-1]
        g = np.ascontiguousarray(g[:, :, :, ::-1])[:, :, :, ::-1]
    expected = reference(inp, grid, grad, MODES.index(mode), PADDINGS.index(padding), align, inp.dtype)
    out = gsn.grid_sample(a, g, mode, padding, align)
    input_grad, grid_grad = gsn.grid_sample_backward(go, a, g, mode, padding, align)
    for what, ours, e in zip(("forward", "input grad", "grid grad"), (out, input_grad, grid_grad), expected):
        assert ours.shape == tuple(e.shape) and ours.dtype == a.dtype, what
        assert_matches(torch.from_numpy(np.ascontiguousarray(ours)), e, inp.dtype, what)


@given(problems(dtypes=(torch.float32, torch.float64)))
def test_patch_torch_routes_and_matches(problem):
    inp, grid, _, options = problem
    without_ties(inp, grid, options)
    mode, padding, align = options
    expected = F.grid_sample(inp, grid, mode, padding, align)
    with gridsampler3d.patch_torch():
        ours = F.grid_sample(inp, grid, mode, padding, align)
    assert F.grid_sample is not gridsampler3d._patch.grid_sample
    assert_matches(ours, expected, inp.dtype, "patched forward")


@st.composite
def warp_problems(draw):
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))  # F.affine_grid refuses N = 0
    shape = (n, c, draw(sizes), draw(sizes), draw(sizes))
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inp = torch.from_numpy(rng.uniform(-3, 3, shape)).to(dtype)
    theta = torch.from_numpy(np.eye(3, 4) + rng.normal(0, 0.2, (n, 3, 4))).to(dtype)
    flow_shape = (n, 3, draw(st.integers(2, 5)), draw(st.integers(2, 5)), draw(st.integers(2, 5)))
    flow = torch.from_numpy(rng.normal(0, 1.5, flow_shape)).to(dtype)
    return inp, theta, flow, draw(st.sampled_from(PADDINGS)), draw(st.booleans())


@given(warp_problems())
def test_warps_match_their_compositions(problem):
    inp, theta, flow, padding, align = problem
    size = (inp.shape[0], inp.shape[1], 3, 2, 4)
    grid = F.affine_grid(theta, size, align_corners=align)
    # F.affine_grid sums theta's product in the dtype, the library in double (semantics.md):
    # a few ulps of the grid, within the bound for bilinear sampling of values up to 3.
    expected = F.grid_sample(inp, grid, "bilinear", padding, align)
    ours = gridsampler3d.affine_warp(inp, theta, size, "bilinear", padding, align)
    assert ours.shape == expected.shape
    assert torch.allclose(ours, expected, rtol=0, atol=1e-4 if inp.dtype == torch.float32 else 1e-10)
    # VoxelMorph's SpatialTransformer: grid = 2 * ((position + flow) / (size - 1) - 0.5), the
    # flow's channels (D, H, W) as (z, y, x), normalized by the flow's size.
    axes = [torch.arange(s, dtype=inp.dtype) for s in flow.shape[2:]]
    position = torch.stack(torch.meshgrid(*axes, indexing="ij"))
    scale = torch.tensor([s - 1 for s in flow.shape[2:]], dtype=inp.dtype).view(1, 3, 1, 1, 1)
    grid = (2 * ((position + flow) / scale - 0.5)).permute(0, 2, 3, 4, 1).flip(-1)
    expected = F.grid_sample(inp, grid, "bilinear", padding, True)
    ours = gridsampler3d.displacement_warp(inp, flow, "bilinear", padding)
    assert_matches(ours, expected, inp.dtype, "displacement warp")


@st.composite
def mismatched_calls(draw):
    """Arguments that do not fit together: each must raise, never crash or return."""
    kind = draw(st.sampled_from(("grid_last_dim", "rank", "batch", "dtype", "mode", "padding", "grad_shape")))
    inp = torch.rand(2, 1, 3, 3, 3)
    grid = torch.rand(2, 2, 2, 2, 3) * 2 - 1
    grad = torch.rand(2, 1, 2, 2, 2)
    mode, padding = "bilinear", "zeros"
    if kind == "grid_last_dim":
        grid = torch.rand(2, 2, 2, 2, draw(st.sampled_from((1, 2, 4))))
    elif kind == "rank":
        inp = inp[0]
    elif kind == "batch":
        grid = grid[:1]
    elif kind == "dtype":
        grid = grid.to(draw(st.sampled_from((torch.float64, torch.float16, torch.int32))))
    elif kind == "mode":
        mode = draw(st.sampled_from(("trilinear", "linear", "")))
    elif kind == "padding":
        padding = draw(st.sampled_from(("wrap", "zero", "")))
    else:
        grad = torch.rand(2, 1, 2, 2, draw(st.sampled_from((1, 3))))
    return kind, inp, grid, grad, mode, padding


@given(mismatched_calls())
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_mismatched_arguments_raise_a_clear_error(call):
    kind, inp, grid, grad, mode, padding = call
    with pytest.raises((ValueError, TypeError, RuntimeError)) as error:
        if kind == "grad_shape":
            gridsampler3d.grid_sample_backward(grad, inp, grid, mode, padding)
        else:
            gridsampler3d.grid_sample(inp, grid, mode, padding)
    assert str(error.value), kind
