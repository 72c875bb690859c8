"""gridsampler3d: a fast, deterministic 3-D grid sampler for the CPU.

    import torch, gridsampler3d
    out = gridsampler3d.grid_sample(volume, grid, mode="bilinear", padding_mode="zeros",
                                    align_corners=False)   # as torch.nn.functional.grid_sample
    out.sum().backward()                                    # gradients by our backward kernel

gridsampler3d.numpy has the same for NumPy arrays. Everything runs in the C library
(libgridsampler3d.so, the aclnn API) through ctypes; see _library for how it is found.
"""
from ._errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, STATUS_NAMES, GridSamplerError
from . import _arguments, _runtime

__version__ = "0.1.0"
__all__ = ["grid_sample", "grid_sample_backward", "affine_warp", "displacement_warp", "patch_torch", "patch_monai",
           "set_deterministic", "is_deterministic", "set_num_threads",
           "get_num_threads", "library_path", "GridSamplerError"]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """torch.nn.functional.grid_sample for 5-D CPU tensors: same signature and values.

    input (N, C, D, H, W) and grid (N, D_out, H_out, W_out, 3) of one dtype (float32, float64,
    float16 or bfloat16); returns (N, C, D_out, H_out, W_out), channels-last when the input
    is. Differentiable with respect to input and grid by gridsampler3d's backward; a backward
    run with create_graph=True (to differentiate the gradients) is computed by PyTorch's
    composition instead, so that higher orders are PyTorch's (float32 and float64 only: PyTorch
    1.13's CPU kernel has no float16 or bfloat16). align_corners=None means False,
    PyTorch's default. Raises GridSamplerError (a RuntimeError) when the library refuses the
    arguments, ValueError for a mode it does not know or a rank other than 5.

    mode="bicubic" is tricubic, which PyTorch refuses in 3-D: PyTorch's 2-D bicubic
    convolution on the three axes (docs/semantics.md); create_graph=True is refused for it."""
    from . import _torch  # torch is needed only here: the NumPy front end works without it

    interpolation, padding = _arguments.interpolation_code(mode), _arguments.padding_code(padding_mode)
    return _torch.GridSampler3DFunction.apply(input, grid, interpolation, padding, bool(align_corners))


def grid_sample_backward(grad_output, input, grid, mode="bilinear", padding_mode="zeros", align_corners=False,
                         output_mask=(True, True)):
    """The backward alone, as torch.ops.aten.grid_sampler_3d_backward: returns (input_grad,
    grid_grad), None for a gradient that output_mask leaves out. Not recorded by autograd."""
    from . import _torch

    interpolation, padding = _arguments.interpolation_code(mode), _arguments.padding_code(padding_mode)
    _arguments.output_shape(input.shape, grid.shape)  # the rank check
    return _torch.backward(grad_output, input, grid, interpolation, padding, bool(align_corners), output_mask)


def affine_warp(input, theta, size=None, mode="bilinear", padding_mode="zeros", align_corners=False):
    """F.grid_sample(input, F.affine_grid(theta, size, align_corners), mode, padding_mode,
    align_corners) without building the grid: the coordinates are computed chunk by chunk in
    the library's workspace (a few MiB whatever the size).

    input (N, C, D, H, W); theta (N, 3, 4) of the input's dtype; size (N, C, D_out, H_out,
    W_out), the input's shape when None. Returns (N, C, D_out, H_out, W_out), channels-last
    when the input is. Differentiable with respect to input and theta (theta's gradient is
    summed in double, the same for any thread count); create_graph=True runs PyTorch's
    composition, as grid_sample does."""
    from . import _warp_torch

    return _warp_torch.affine_warp(input, theta, size, mode, padding_mode, align_corners)


def displacement_warp(input, flow, mode="bilinear", padding_mode="zeros"):
    """VoxelMorph's SpatialTransformer without building the grid: output voxel (d, h, w)
    samples input at (d, h, w) + flow[:, :, d, h, w], in voxels along (D, H, W), normalized by
    the flow's size with align_corners=True (the flow's D, H and W must be at least 2).

    input (N, C, D, H, W); flow (N, 3, D_out, H_out, W_out) of the input's dtype. Returns (N,
    C, D_out, H_out, W_out). Differentiable with respect to input and flow."""
    from . import _warp_torch

    return _warp_torch.displacement_warp(input, flow, mode, padding_mode)


def patch_torch(enabled=True):
    """Routes torch.nn.functional.grid_sample to gridsampler3d: the one line that speeds up code
    written against PyTorch. patch_torch(False) restores PyTorch's function.

        gridsampler3d.patch_torch()                  # from now on
        with gridsampler3d.patch_torch(): ...        # inside the block only (restored on exit,
                                                     # also when the block raises)

    Routed: 5-D CPU tensors (plain torch.Tensor, not subclasses), input and grid of one dtype
    among float32, float64, float16 and bfloat16, mode bilinear, nearest or bicubic (tricubic,
    which PyTorch refuses in 3-D), any padding mode.
    Everything else (4-D, CUDA, other or mixed dtypes, unknown modes) goes to PyTorch's
    own function with the caller's arguments, so it behaves, raises and warns as before.
    align_corners=None means False with PyTorch's warning, as in PyTorch. A backward run with
    create_graph=True is PyTorch's (see grid_sample), so higher-order autograd stays PyTorch's.

    Only the attribute torch.nn.functional.grid_sample is replaced: code that bound PyTorch's
    function to a name of its own before patching (`from torch.nn.functional import
    grid_sample`) keeps PyTorch's. Thread-safe; returns an object usable as a context manager,
    whose exit puts back the state found on entry."""
    from . import _patch  # torch is needed only here and in grid_sample

    return _patch.Patch(_patch._set, enabled)


def patch_monai(enabled=True):
    """Routes MONAI's Affine and RandAffine (and so Affined and RandAffined) and its Warp layer
    to the fused warps: the one line that speeds up MONAI augmentation and registration code.
    patch_monai(False) restores MONAI's methods; the context-manager form is patch_torch's.

        gridsampler3d.patch_monai()
        with gridsampler3d.patch_monai(): ...

    Routed: channel-first 3-D CPU images (MetaTensor or tensor, no pending lazy operations),
    mode "bilinear" or "nearest" (or what MONAI resolves to them), padding "zeros", "border" or
    "reflection". The affine transforms ask MONAI for their matrix only (the same random draws)
    and keep MONAI's metadata and inverse; Warp takes 5-D float32 or float64 tensors and is
    differentiable. Everything else (CUDA, spline modes, 2-D, lazy resampling, Warp with jitter
    or MONAI's compiled extension) runs MONAI's own code. A float32 image on MONAI's default
    float32 grid is sampled in float32 (see docs/semantics.md, "MONAI"). Refuses (RuntimeError, nothing
    patched) on a MONAI version it was not tested with; ImportError without MONAI."""
    from . import _monai, _patch

    return _patch.Patch(_monai._set, enabled)


def set_deterministic(enabled):
    """ACL_OPT_DETERMINISTIC. Our kernels are bitwise reproducible either way (the work split
    depends on the shape only); the option is kept for code written against CANN."""
    _runtime.set_deterministic(enabled)


def is_deterministic():
    return _runtime.is_deterministic()


def set_num_threads(count):
    """Threads each kernel uses from now on, for every thread and stream; 0 restores the
    default (OMP_NUM_THREADS, or one per core). Results do not depend on it."""
    _runtime.set_num_threads(count)


def get_num_threads():
    return _runtime.get_num_threads()


def library_path():
    """The path of the libgridsampler3d.so in use."""
    return _runtime.library().gridsampler3d_path
