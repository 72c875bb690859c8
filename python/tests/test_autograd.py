"""gridsampler3d.grid_sample as a drop-in for torch.nn.functional.grid_sample: values and
autograd gradients equal PyTorch's over modes, paddings, alignments, dtypes and layouts;
only the gradients autograd needs are computed; tensors reach the library without copies;
gradcheck passes in double."""
import itertools
import zlib

import pytest
import torch
import torch.nn.functional as F

import gridsampler3d
from gridsampler3d import _runtime
from torch_reference import TORCH_ROUNDS_3D_TIES_AWAY, assert_matches, tie_points

MODES, PADDINGS = ("bilinear", "nearest"), ("zeros", "border", "reflection")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
LAYOUTS = ("contiguous", "channels_last", "strided")


def in_layout(t, layout):
    if layout == "channels_last":
        return t.contiguous(memory_format=torch.channels_last_3d)
    if layout == "strided":  # every other element of a tensor twice as wide
        wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
        wide[..., ::2] = t
        return wide[..., ::2]
    return t.contiguous()


def random_case(seed, dtype, layout):
    gen = torch.Generator().manual_seed(seed)
    inp = torch.rand(2, 3, 4, 5, 6, generator=gen, dtype=torch.float64) * 4 - 2
    # Inside and outside [-1, 1]; nowhere near a nearest-mode tie (see test_torch_crosscheck).
    grid = torch.rand(2, 3, 2, 4, 3, generator=gen, dtype=torch.float64) * 2.6 - 1.3
    weight = torch.rand(2, 3, 3, 2, 4, generator=gen, dtype=torch.float64)
    return in_layout(inp.to(dtype), layout), grid.to(dtype), weight.to(dtype)


def gradients(sampler, inp, grid, weight, mode, padding, align, compute=None):
    """Output, d(sum(out * weight))/d input and /d grid, by autograd; compute: the dtype the
    reference runs in (PyTorch 1.13 has no fp16/bf16 CPU kernel)."""
    i = (inp.to(compute) if compute else inp).detach().requires_grad_()
    g = (grid.to(compute) if compute else grid).detach().requires_grad_()
    out = sampler(i, g, mode=mode, padding_mode=padding, align_corners=align)
    (out * (weight.to(out.dtype))).sum().backward()
    return out.detach(), i.grad, g.grad


@pytest.mark.parametrize("mode,padding,align,dtype,layout",
                         list(itertools.product(MODES, PADDINGS, (False, True), DTYPES, LAYOUTS)))
def test_autograd_matches_pytorch(mode, padding, align, dtype, layout):
    seed = zlib.crc32(repr((mode, padding, align, str(dtype), layout)).encode())
    inp, grid, weight = random_case(seed, dtype, layout)
    keep = torch.ones(grid.shape[:4], dtype=torch.bool)
    if mode == "nearest" and TORCH_ROUNDS_3D_TIES_AWAY:
        # Grid points on an exact tie (frequent once rounded to fp16/bf16) are left out: PyTorch
        # 1.13 rounds them away from zero, we to even (see test_nearest_tie_rounding).
        keep = ~tie_points(inp, grid, PADDINGS.index(padding), align)
        weight = weight * keep[:, None]
    ours = gradients(gridsampler3d.grid_sample, inp, grid, weight, mode, padding, align)
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    expected = gradients(F.grid_sample, inp, grid, weight, mode, padding, align, compute)
    points = keep[:, None].expand_as(ours[0])
    assert ours[0].dtype == dtype
    assert_matches(ours[0][points], expected[0][points], dtype, "forward")
    for what, o, e in zip(("input grad", "grid grad"), ours[1:], expected[1:]):
        assert o.dtype == dtype, what
        assert_matches(o, e, dtype, what)
    # The output and input grad follow the input's layout, as the memory was given.
    if layout == "channels_last":
        assert ours[0].is_contiguous(memory_format=torch.channels_last_3d)
        assert ours[1].is_contiguous(memory_format=torch.channels_last_3d)
    else:
        assert ours[0].is_contiguous() and ours[1].is_contiguous()


@pytest.fixture
def recorded_calls(monkeypatch):
    """Records the views the package hands to the C library."""
    calls = []
    for name in ("forward", "backward"):
        original = getattr(_runtime, name)

        def record(*args, _original=original, _name=name):
            calls.append((_name, args))
            return _original(*args)
        monkeypatch.setattr(_runtime, name, record)
    return calls


@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
def test_backward_asks_only_for_needed_gradients(needs, recorded_calls):
    inp, grid, weight = random_case(7, torch.float32, "contiguous")
    inp.requires_grad_(needs[0])
    grid.requires_grad_(needs[1])
    gridsampler3d.grid_sample(inp, grid).mul(weight).sum().backward()
    backward_calls = [args for name, args in recorded_calls if name == "backward"]
    assert len(backward_calls) == 1
    assert backward_calls[0][-1] == needs  # the output mask
    input_grad_view, grid_grad_view = backward_calls[0][3], backward_calls[0][4]
    assert (input_grad_view.data != 0) == needs[0]  # an unneeded gradient is not even allocated
    assert (grid_grad_view.data != 0) == needs[1]
    assert (inp.grad is not None) == needs[0] and (grid.grad is not None) == needs[1]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_tensors_are_passed_without_copies(layout, recorded_calls):
    inp, grid, _ = random_case(3, torch.float32, layout)
    out = gridsampler3d.grid_sample(inp, grid)
    (_, (input_view, grid_view, output_view, *_)), = recorded_calls
    assert input_view.data == inp.data_ptr() and input_view.strides == inp.stride()
    assert grid_view.data == grid.data_ptr()
    assert output_view.data == out.data_ptr()


def test_broadcast_grad_output_is_read_in_place(recorded_calls):
    inp, grid, _ = random_case(5, torch.float64, "contiguous")
    inp.requires_grad_()
    gridsampler3d.grid_sample(inp, grid).sum().backward()  # autograd's gradient is an expand: stride 0
    (_, args), = [c for c in recorded_calls if c[0] == "backward"]
    assert 0 in args[0].strides
    expected = torch.autograd.grad(F.grid_sample(inp, grid, align_corners=False).sum(), inp)[0]
    assert torch.allclose(inp.grad, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("mode,padding,align", list(itertools.product(MODES, PADDINGS, (False, True))))
def test_gradcheck_double(mode, padding, align):
    gen = torch.Generator().manual_seed(11)
    inp = torch.rand(1, 2, 3, 4, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    grid = (torch.rand(1, 2, 3, 2, 3, generator=gen, dtype=torch.float64) * 2.4 - 1.2).requires_grad_(mode == "bilinear")
    # Nearest mode is piecewise constant in the grid: its grid gradient is zero, and finite
    # differences across a voxel boundary are not, so only the input is checked there.
    assert torch.autograd.gradcheck(
        lambda i, g: gridsampler3d.grid_sample(i, g, mode=mode, padding_mode=padding, align_corners=align),
        (inp, grid), eps=1e-6, atol=1e-7)


def test_nearest_grid_gradient_is_zero():
    inp, grid, weight = random_case(13, torch.float64, "contiguous")
    grid.requires_grad_()
    gridsampler3d.grid_sample(inp, grid, mode="nearest").mul(weight).sum().backward()
    assert torch.count_nonzero(grid.grad) == 0


def test_create_graph_backward_is_pytorchs(recorded_calls):
    """With create_graph=True the gradients are PyTorch's graph (the library's backward is an
    autograd leaf): PyTorch's first-order values, and PyTorch 1.13's refusal of the second."""
    inp, grid, _ = random_case(17, torch.float64, "contiguous")
    inp.requires_grad_(), grid.requires_grad_()
    first = torch.autograd.grad(gridsampler3d.grid_sample(inp, grid).square().sum(), (inp, grid), create_graph=True)
    expected = torch.autograd.grad(F.grid_sample(inp, grid, align_corners=False).square().sum(), (inp, grid),
                                   create_graph=True)
    assert [name for name, _ in recorded_calls] == ["forward"]
    assert all(torch.equal(a, b) for a, b in zip(first, expected))
    with pytest.raises(RuntimeError) as ours:
        first[1].sum().backward()
    with pytest.raises(RuntimeError) as theirs:
        expected[1].sum().backward()
    assert str(ours.value) == str(theirs.value)


def test_create_graph_backward_in_half_precision_is_refused():
    inp, grid, _ = random_case(17, torch.float16, "contiguous")
    inp.requires_grad_()
    with pytest.raises(RuntimeError, match="create_graph=True runs PyTorch's grid_sample"):
        torch.autograd.grad(gridsampler3d.grid_sample(inp, grid).sum(), inp, create_graph=True)


@pytest.mark.parametrize("shape,grid_shape", [((0, 2, 3, 3, 3), (0, 2, 2, 2, 3)), ((1, 0, 3, 3, 3), (1, 2, 2, 2, 3)),
                                              ((1, 2, 3, 3, 3), (1, 0, 2, 2, 3))])
def test_empty_tensors(shape, grid_shape):
    inp = torch.rand(shape, dtype=torch.float64, requires_grad=True)
    grid = (torch.rand(grid_shape, dtype=torch.float64) * 2 - 1).requires_grad_()
    out = gridsampler3d.grid_sample(inp, grid)
    expected = F.grid_sample(inp, grid, align_corners=False)
    assert out.shape == expected.shape
    out.sum().backward()
    assert inp.grad.shape == inp.shape and torch.count_nonzero(inp.grad) == 0
    assert grid.grad.shape == grid.shape


def test_align_corners_none_is_false():
    inp, grid, _ = random_case(19, torch.float32, "contiguous")
    assert torch.equal(gridsampler3d.grid_sample(inp, grid, align_corners=None),
                       gridsampler3d.grid_sample(inp, grid, align_corners=False))
