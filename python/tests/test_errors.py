"""What the C library refuses arrives as GridSamplerError with its status code and the text of
aclGetRecentErrMsg; what the package refuses itself is a ValueError or TypeError. A refused
call leaves nothing behind: the next call works."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import gridsampler3d
import gridsampler3d.numpy as gsn
from gridsampler3d import ACLNN_ERR_PARAM_INVALID, GridSamplerError


def volume(dtype=torch.float32, shape=(1, 2, 3, 3, 3)):
    return (torch.rand(shape) * 4).to(dtype)


def grid(dtype=torch.float32, shape=(1, 2, 2, 2, 3)):
    return (torch.rand(shape) * 2 - 1).to(dtype)


@pytest.mark.parametrize("inp,g,words", [
    (volume(), grid(torch.float64), "grid"),                      # dtypes differ
    (volume(torch.int32), grid(torch.int32), "dtype"),            # a dtype the op does not compute
    (volume(), grid(shape=(1, 2, 2, 2, 2)), "last dim"),          # grid's last dim is not 3
    (volume(shape=(2, 2, 3, 3, 3)), grid(), "its N must equal"),  # batch sizes differ
    (volume(shape=(1, 2, 0, 3, 3)), grid(), "input"),             # an empty input volume
])
def test_forward_refusals_carry_status_and_message(inp, g, words):
    with pytest.raises(GridSamplerError) as info:
        gridsampler3d.grid_sample(inp, g)
    error = info.value
    assert isinstance(error, RuntimeError)  # what PyTorch raises for these
    assert error.status == ACLNN_ERR_PARAM_INVALID
    assert error.api == "aclnnGridSampler3DGetWorkspaceSize"
    assert words in error.message and words in str(error)
    assert "161002" in str(error) and "ACLNN_ERR_PARAM_INVALID" in str(error)


def test_backward_refusal():
    inp, g = volume(), grid()
    wrong_grad = torch.rand(1, 2, 2, 2, 3)  # the forward's output is (1, 2, 2, 2, 2)
    with pytest.raises(GridSamplerError) as info:
        gridsampler3d.grid_sample_backward(wrong_grad, inp, g)
    assert info.value.status == ACLNN_ERR_PARAM_INVALID
    assert info.value.api == "aclnnGridSampler3DBackwardGetWorkspaceSize"
    assert "gradOutput" in info.value.message


def test_numpy_refusals():
    with pytest.raises(GridSamplerError) as info:
        gsn.grid_sample(np.zeros((1, 1, 2, 2, 2), np.int64), np.zeros((1, 1, 1, 1, 3), np.int64))
    assert info.value.status == ACLNN_ERR_PARAM_INVALID
    with pytest.raises(TypeError, match="dtype"):
        gsn.grid_sample(np.zeros((1, 1, 2, 2, 2), "U1"), np.zeros((1, 1, 1, 1, 3), "U1"))


@pytest.mark.parametrize("kwargs,message", [
    ({"mode": "trilinear"}, "expected mode"), ({"padding_mode": "wrap"}, "expected padding_mode")])
def test_unknown_modes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gridsampler3d.grid_sample(volume(), grid(), **kwargs)
    with pytest.raises(ValueError, match=message):
        gsn.grid_sample(volume().numpy(), grid().numpy(), **kwargs)


def test_ranks_other_than_five():
    with pytest.raises(ValueError, match="5-D"):
        gridsampler3d.grid_sample(torch.rand(1, 2, 3, 3), torch.rand(1, 2, 2, 2))


def test_tensors_off_the_cpu_and_non_tensors():
    with pytest.raises(ValueError, match="meta"):
        gridsampler3d.grid_sample(volume().to("meta"), grid().to("meta"))
    with pytest.raises(TypeError, match="torch.Tensor"):
        gridsampler3d.grid_sample(volume().numpy(), grid())


def test_refused_call_leaves_nothing_behind():
    with pytest.raises(GridSamplerError):
        gridsampler3d.grid_sample(volume(), grid(torch.float64))
    inp, g = volume(torch.float64), grid(torch.float64)
    out = gridsampler3d.grid_sample(inp, g)
    assert torch.equal(out, torch.nn.functional.grid_sample(inp, g, align_corners=False))
    # The message was read once: the library's recent-error slot is empty again.
    assert gridsampler3d._runtime.library().aclGetRecentErrMsg() in (None, b"")


def test_runtime_errors_map_too():
    with pytest.raises(GridSamplerError) as info:
        gridsampler3d.set_num_threads(-1)
    assert info.value.status == 100000 and info.value.api == "gs3dSetNumThreads"
    assert "ACL_ERROR_INVALID_PARAM" in str(info.value)


def test_missing_library_is_a_clear_error():
    env = dict(os.environ, GRIDSAMPLER3D_LIBRARY="/nonexistent/libgridsampler3d.so")
    code = "import gridsampler3d; gridsampler3d.library_path()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode != 0
    assert "OSError" in result.stderr and "/nonexistent/libgridsampler3d.so" in result.stderr
