"""gridsampler3d.numpy: values and gradients equal PyTorch's (fp16, fp32, fp64), the output
mask, any array layout, and no dependency on torch."""
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import gridsampler3d.numpy as gsn
from torch_reference import assert_matches, reference

MODES, PADDINGS = ("bilinear", "nearest"), ("zeros", "border", "reflection")
DTYPES = {np.float16: torch.float16, np.float32: torch.float32, np.float64: torch.float64}


def random_arrays(seed, dtype):
    rng = np.random.default_rng(seed)
    inp = rng.uniform(-3, 3, (2, 3, 4, 5, 6)).astype(dtype)
    # Grid points keep off nearest-mode ties: an fp16 grid is rounded to a multiple of 2^-8
    # plus 2^-9, never a k + 0.5 index for these sizes.
    grid = ((np.floor(rng.uniform(-1.3, 1.3, (2, 3, 2, 4, 3)) * 256) + 0.5) / 256).astype(dtype)
    grad = rng.uniform(-1, 1, (2, 3, 3, 2, 4)).astype(dtype)
    return inp, grid, grad


@pytest.mark.parametrize("mode,padding,align,dtype",
                         list(itertools.product(range(2), range(3), (False, True), DTYPES)))
def test_matches_pytorch(mode, padding, align, dtype):
    inp, grid, grad = random_arrays(mode * 100 + padding * 10 + align, dtype)
    out = gsn.grid_sample(inp, grid, MODES[mode], PADDINGS[padding], align)
    input_grad, grid_grad = gsn.grid_sample_backward(grad, inp, grid, MODES[mode], PADDINGS[padding], align)
    tdtype = DTYPES[dtype]
    expected = reference(*(torch.from_numpy(a) for a in (inp, grid, grad)), mode, padding, align, tdtype)
    for what, ours, e in zip(("forward", "input grad", "grid grad"), (out, input_grad, grid_grad), expected):
        assert ours.dtype == dtype, what
        assert_matches(torch.from_numpy(np.ascontiguousarray(ours)), e, tdtype, what)


@pytest.mark.parametrize("mask", [(True, False), (False, True), (False, False)])
def test_output_mask(mask):
    inp, grid, grad = random_arrays(1, np.float64)
    full = gsn.grid_sample_backward(grad, inp, grid)
    partial = gsn.grid_sample_backward(grad, inp, grid, output_mask=mask)
    for wanted, f, p in zip(mask, full, partial):
        if wanted:
            np.testing.assert_array_equal(p, f)
        else:
            assert p is None


def layouts(a):
    """The same values as a in memory orders that arrive without a copy (transposed views,
    strided slices, Fortran order) and ones that are copied first (negative strides,
    byte-swapped, unaligned)."""
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    flipped = np.ascontiguousarray(a[..., ::-1])[..., ::-1]
    swapped = a.astype(a.dtype.newbyteorder(">"))
    raw = np.zeros(a.nbytes + 1, np.uint8)[1:]
    unaligned = raw.view(a.dtype).reshape(a.shape)
    unaligned[...] = a
    return {"channels_last": np.ascontiguousarray(a.transpose(0, 2, 3, 4, 1)).transpose(0, 4, 1, 2, 3),
            "strided": wide[..., ::2], "fortran": np.asfortranarray(a), "negative_strides": flipped,
            "byte_swapped": swapped, "unaligned": unaligned}


@pytest.mark.parametrize("layout", ["channels_last", "strided", "fortran", "negative_strides", "byte_swapped",
                                    "unaligned"])
def test_any_layout_gives_the_same_values(layout):
    inp, grid, grad = random_arrays(2, np.float32)
    expected_out = gsn.grid_sample(inp, grid, align_corners=True)
    expected_grads = gsn.grid_sample_backward(grad, inp, grid, align_corners=True)
    inp_l, grid_l, grad_l = (layouts(a)[layout] for a in (inp, grid, grad))
    np.testing.assert_array_equal(gsn.grid_sample(inp_l, grid_l, align_corners=True), expected_out)
    for ours, e in zip(gsn.grid_sample_backward(grad_l, inp_l, grid_l, align_corners=True), expected_grads):
        np.testing.assert_array_equal(ours, e)


def test_channels_last_input_gives_channels_last_outputs():
    inp, grid, grad = random_arrays(3, np.float32)
    cl = layouts(inp)["channels_last"]
    out = gsn.grid_sample(cl, grid)
    input_grad, _ = gsn.grid_sample_backward(grad, cl, grid)
    for a in (out, input_grad):
        assert a.transpose(0, 2, 3, 4, 1).flags.c_contiguous


def test_lists_and_broadcast_arrays_are_accepted():
    inp = np.broadcast_to(np.arange(4.0).reshape(1, 1, 1, 1, 4), (2, 3, 2, 2, 4))  # strides of 0
    grid = np.zeros((2, 1, 1, 1, 3))
    out = gsn.grid_sample(inp, grid.tolist(), align_corners=True)
    np.testing.assert_array_equal(out, np.full((2, 3, 1, 1, 1), 1.5))


def test_does_not_import_torch():
    code = "import sys, numpy, gridsampler3d.numpy as g; g.grid_sample(numpy.zeros((1,1,2,2,2)), numpy.zeros((1,1,1,1,3))); print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"



def test_negative_strides_of_size_one_axes():
    """Found by test_properties.py: a view with a negative stride along an axis of size 1 (or
    an empty view) is contiguous to NumPy, so np.ascontiguousarray returned it as it was and
    aclCreateTensor refused the stride."""
    inp = np.arange(4, dtype=np.float32).reshape(1, 2, 1, 2, 1)[..., ::-1]
    assert inp.strides[-1] < 0
    grid = np.full((1, 1, 1, 1, 3), 0.25, dtype=np.float32)[:, :, :, ::-1]
    expected = gsn.grid_sample(np.ascontiguousarray(inp).copy(), grid.copy())
    np.testing.assert_array_equal(gsn.grid_sample(inp, grid), expected)
    empty = np.zeros((1, 0, 2, 1, 3), dtype=np.float32)[:, :, :, ::-1]
    assert gsn.grid_sample(inp, empty).shape == (1, 2, 0, 2, 1)
    input_grad, grid_grad = gsn.grid_sample_backward(np.ones((1, 2, 1, 1, 1), np.float32), inp, grid)
    assert input_grad.shape == inp.shape and grid_grad.shape == grid.shape
