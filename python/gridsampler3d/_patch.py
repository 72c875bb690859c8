"""patch_torch: torch.nn.functional.grid_sample routed to gridsampler3d for the calls it serves.

The replacement keeps PyTorch's signature, defaults and warning. A call reaches gridsampler3d
only when both tensors are plain 5-D CPU tensors of one dtype the library supports and the mode
and padding are ones it has; every other call goes to PyTorch's own function unchanged, so
PyTorch raises, warns and dispatches (__torch_function__, CUDA, 4-D) as it always did; 5-D
bicubic, which PyTorch refuses, is gridsampler3d's tricubic.
"""
import threading
import warnings

import torch
import torch.nn.functional as F

from . import _arguments
from ._torch import TORCH_GRID_SAMPLE as _torch_grid_sample

ROUTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)

# PyTorch's own words (torch/nn/functional.py), so that patched code sees the same warning.
ALIGN_CORNERS_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                         "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                         "documentation of grid_sample for details.")

_lock = threading.Lock()


def routes_to_gridsampler3d(input, grid, mode, padding_mode, align_corners):
    """True when the call is one gridsampler3d computes; False sends it to PyTorch."""
    if type(input) is not torch.Tensor or type(grid) is not torch.Tensor:
        return False  # subclasses and other types: PyTorch's __torch_function__ dispatch
    if input.dim() != 5 or grid.dim() != 5 or input.device.type != "cpu" or grid.device.type != "cpu":
        return False
    if input.dtype not in ROUTED_DTYPES or grid.dtype != input.dtype:
        return False
    if mode not in _arguments.INTERPOLATION_CODES or padding_mode not in _arguments.PADDING_CODES:
        return False
    return align_corners is None or isinstance(align_corners, bool)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    if not routes_to_gridsampler3d(input, grid, mode, padding_mode, align_corners):
        return _torch_grid_sample(input, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    if align_corners is None:
        warnings.warn(ALIGN_CORNERS_WARNING)
        align_corners = False
    from . import grid_sample as gridsampler3d_grid_sample
    return gridsampler3d_grid_sample(input, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


grid_sample.__doc__ = ("torch.nn.functional.grid_sample, patched by gridsampler3d.patch_torch(): 5-D CPU "
                       "tensors are sampled by gridsampler3d, every other call by PyTorch.\n\n"
                       + (_torch_grid_sample.__doc__ or ""))


_torchscript_registered = False


def _let_torchscript_compile_pytorchs():
    """TorchScript compiles the Python functions that scripted code calls, and the replacement
    is not TorchScript: torch.jit.script of a module that calls F.grid_sample would fail under
    the patch. Registering PyTorch's compiled function as the replacement's makes scripted code
    compile and run PyTorch's kernel. torch.jit._state is private API: where it has changed,
    scripting under the patch fails as it would without this."""
    global _torchscript_registered
    if _torchscript_registered:
        return
    _torchscript_registered = True
    try:
        from torch.jit import _state
        _state._set_jit_function_cache(grid_sample, torch.jit.script(_torch_grid_sample))
    except Exception:  # noqa: BLE001 (a private API: any failure leaves scripting as it was)
        pass


def is_patched():
    return F.grid_sample is grid_sample


def _set(patched):
    """Installs or removes the replacement; returns whether it was installed before. Under the
    lock, so that threads patching and unpatching at once never capture the replacement as
    PyTorch's function."""
    with _lock:
        was_patched = is_patched()
        if patched:
            _let_torchscript_compile_pytorchs()
            F.grid_sample = grid_sample
        elif was_patched:  # someone else's replacement is theirs to undo
            F.grid_sample = _torch_grid_sample
        return was_patched


class Patch:
    """What patch_torch and patch_monai return: the patch is already applied (or removed) by
    set_patched(enabled), which returns whether it was applied before; used as a context
    manager, it puts that state back on exit, also when the block raises."""

    def __init__(self, set_patched, enabled):
        self._set = set_patched
        self._was_patched = set_patched(bool(enabled))

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._set(self._was_patched)
        return False
