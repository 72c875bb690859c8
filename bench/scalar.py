"""The scalar baselines (scalar_baseline.cpp, scalar_tricubic.cpp) called on torch tensors through ctypes."""
import ctypes

import torch

_I64x5 = ctypes.c_int64 * 5


def _shape(t):
    return _I64x5(*t.shape)


def _strides(t):
    return _I64x5(*t.stride())


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


class ScalarBaseline:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)

    @staticmethod
    def _double(t):
        if t.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"the scalar baseline takes float32 or float64, not {t.dtype}")
        return int(t.dtype == torch.float64)

    def forward(self, inp, grid, out, padding, align_corners=False, tricubic=False):
        call = self.lib.gs3d_scalar_tricubic_forward if tricubic else self.lib.gs3d_scalar_forward
        call(self._double(inp), padding, int(align_corners), _ptr(inp), _shape(inp), _strides(inp), _ptr(grid),
             _shape(grid), _strides(grid), _ptr(out), _strides(out))

    def backward(self, grad, inp, grid, input_grad, grid_grad, padding, align_corners=False, tricubic=False):
        call = self.lib.gs3d_scalar_tricubic_backward if tricubic else self.lib.gs3d_scalar_backward
        call(self._double(inp), padding, int(align_corners), _ptr(grad), _strides(grad), _ptr(inp), _shape(inp),
             _strides(inp), _ptr(grid), _shape(grid), _strides(grid), _ptr(input_grad), _strides(input_grad),
             _ptr(grid_grad), _strides(grid_grad))
