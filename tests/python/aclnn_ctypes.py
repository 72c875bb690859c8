"""Minimal ctypes bindings of the installed gridsampler3d library, for the cross-checks.

The library is found through GRIDSAMPLER3D_LIBRARY (a path to libgridsampler3d.so).
"""
import ctypes
import os

import torch

ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE, ACL_BF16 = 0, 1, 11, 27
ACL_FORMAT_ND, ACL_FORMAT_NDHWC, ACL_FORMAT_NCDHW = 2, 27, 30
ACLNN_SUCCESS = 0

DTYPE_CODES = {torch.float32: ACL_FLOAT, torch.float16: ACL_FLOAT16, torch.float64: ACL_DOUBLE,
               torch.bfloat16: ACL_BF16}

_i64p = ctypes.POINTER(ctypes.c_int64)


def _load():
    path = os.environ.get("GRIDSAMPLER3D_LIBRARY")
    if not path:
        raise RuntimeError("set GRIDSAMPLER3D_LIBRARY to the installed libgridsampler3d.so")
    lib = ctypes.CDLL(path)
    lib.aclCreateTensor.restype = ctypes.c_void_p
    lib.aclCreateTensor.argtypes = [_i64p, ctypes.c_uint64, ctypes.c_int, _i64p, ctypes.c_int64, ctypes.c_int,
                                    _i64p, ctypes.c_uint64, ctypes.c_void_p]
    lib.aclDestroyTensor.argtypes = [ctypes.c_void_p]
    lib.aclCreateBoolArray.restype = ctypes.c_void_p
    lib.aclCreateBoolArray.argtypes = [ctypes.POINTER(ctypes.c_bool), ctypes.c_uint64]
    lib.aclDestroyBoolArray.argtypes = [ctypes.c_void_p]
    lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
    lib.aclrtCreateStream.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.aclrtSynchronizeStream.argtypes = [ctypes.c_void_p]
    lib.aclnnGridSampler3DGetWorkspaceSize.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_bool, ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_void_p)]
    lib.aclnnGridSampler3D.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]
    lib.aclnnGridSampler3DBackwardGetWorkspaceSize.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_bool,
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
        ctypes.POINTER(ctypes.c_void_p)]
    lib.aclnnGridSampler3DBackward.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]
    return lib


class Session:
    """aclInit, device 0 and one stream."""

    def __init__(self):
        self.lib = _load()
        assert self.lib.aclInit(None) == 0
        assert self.lib.aclrtSetDevice(0) == 0
        self.stream = ctypes.c_void_p()
        assert self.lib.aclrtCreateStream(ctypes.byref(self.stream)) == 0

    def tensor(self, t, fmt=ACL_FORMAT_ND):
        """An aclTensor viewing torch tensor t (any strides) in place."""
        dims = (ctypes.c_int64 * t.dim())(*t.shape)
        strides = (ctypes.c_int64 * t.dim())(*t.stride())
        extent = 1 + sum((d - 1) * s for d, s in zip(t.shape, t.stride())) if t.numel() else 0
        storage = (ctypes.c_int64 * 1)(extent)
        handle = self.lib.aclCreateTensor(dims, t.dim(), DTYPE_CODES[t.dtype], strides, 0, fmt, storage, 1,
                                          ctypes.c_void_p(t.data_ptr()))
        assert handle, self.message()
        return handle

    def message(self):
        m = self.lib.aclGetRecentErrMsg()
        return m.decode() if m else ""

    def _launch(self, status, size, executor, launch):
        """Runs the second phase with a fresh workspace; returns the workspace size."""
        if status != ACLNN_SUCCESS:
            raise RuntimeError(f"GetWorkspaceSize failed: {status} {self.message()}")
        workspace = torch.empty(max(size.value, 1), dtype=torch.uint8)
        status = launch(ctypes.c_void_p(workspace.data_ptr()), size.value, executor, self.stream)
        if status != ACLNN_SUCCESS:
            raise RuntimeError(f"launch failed: {status} {self.message()}")
        assert self.lib.aclrtSynchronizeStream(self.stream) == 0, self.message()
        return size.value

    def forward(self, inp, grid, out, mode, padding, align, channel_last=False):
        fmt = ACL_FORMAT_NDHWC if channel_last else ACL_FORMAT_NCDHW
        handles = [self.tensor(inp, fmt), self.tensor(grid), self.tensor(out, fmt)]
        size, executor = ctypes.c_uint64(), ctypes.c_void_p()
        try:
            status = self.lib.aclnnGridSampler3DGetWorkspaceSize(handles[0], handles[1], mode, padding, align,
                                                                 handles[2], ctypes.byref(size),
                                                                 ctypes.byref(executor))
            return self._launch(status, size, executor, self.lib.aclnnGridSampler3D)
        finally:
            for h in handles:
                self.lib.aclDestroyTensor(h)

    def backward(self, grad, inp, grid, input_grad, grid_grad, mode, padding, align, mask=(True, True),
                 channel_last=False):
        fmt = ACL_FORMAT_NDHWC if channel_last else ACL_FORMAT_NCDHW
        handles = [self.tensor(grad, fmt), self.tensor(inp, fmt), self.tensor(grid), self.tensor(input_grad, fmt),
                   self.tensor(grid_grad)]
        values = (ctypes.c_bool * 2)(*mask)
        mask_handle = self.lib.aclCreateBoolArray(values, 2)
        size, executor = ctypes.c_uint64(), ctypes.c_void_p()
        try:
            status = self.lib.aclnnGridSampler3DBackwardGetWorkspaceSize(
                handles[0], handles[1], handles[2], mode, padding, align, mask_handle, handles[3], handles[4],
                ctypes.byref(size), ctypes.byref(executor))
            return self._launch(status, size, executor, self.lib.aclnnGridSampler3DBackward)
        finally:
            for h in handles:
                self.lib.aclDestroyTensor(h)
            self.lib.aclDestroyBoolArray(mask_handle)
