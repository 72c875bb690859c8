"""The ACL runtime under the package: aclInit once, device 0, one stream and one workspace per
Python thread, and the two operators called on raw strided views.

Everything here is framework-neutral: a view is a data pointer (of the first element), a
shape and strides in elements, and an ACL dtype code. The torch and NumPy front ends make
views of their arrays without copying them.
"""
import atexit
import ctypes
import threading
from dataclasses import dataclass

from . import _arguments, _library
from ._errors import GridSamplerError

ACL_FORMAT_ND, ACL_FORMAT_NCDHW = 2, 30
ACL_OPT_DETERMINISTIC = 0
ACL_MEM_MALLOC_NORMAL_ONLY = 2

# Dtype names (as torch and NumPy spell them) and ACL's codes. The unsupported ones are mapped
# too, so that the C library, not this package, refuses them with its own status.
ACL_DTYPES = {
    "float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6, "uint16": 7, "uint32": 8,
    "int64": 9, "uint64": 10, "float64": 11, "bool": 12, "complex64": 16, "complex128": 17, "bfloat16": 27,
}

_lock = threading.Lock()
_lib = None


def library():
    """The loaded library, with aclInit and aclrtSetDevice(0) done (on first use)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                lib = _library.load()
                _check(lib, "aclInit", lib.aclInit(None))
                _check(lib, "aclrtSetDevice", lib.aclrtSetDevice(0))
                atexit.register(lib.aclFinalize)
                _lib = lib
    return _lib


def _message(lib):
    text = lib.aclGetRecentErrMsg()
    return text.decode(errors="replace") if text else ""


def _check(lib, api, status):
    if status != 0:
        raise GridSamplerError(api, status, _message(lib))


@dataclass
class View:
    """A strided view of memory: data points at element [0, 0, ...]; strides in elements, >= 0."""
    data: int
    shape: tuple
    strides: tuple
    dtype: str


def view_without_data(shape, dtype):
    """An output that the mask leaves out: described to the library, which neither reads nor
    writes it, so it is not allocated."""
    return View(0, tuple(shape), _arguments.contiguous_strides(shape), dtype)


class _ThreadState:
    """This thread's stream and workspace; freed when the thread ends (its locals are dropped)."""

    def __init__(self, lib):
        self.lib = lib
        self.stream = ctypes.c_void_p()
        _check(lib, "aclrtCreateStream", lib.aclrtCreateStream(ctypes.byref(self.stream)))
        self.workspace = ctypes.c_void_p()
        self.workspace_size = 0

    def workspace_of(self, size):
        """A workspace of at least size bytes, kept for the next call of this thread."""
        if size > self.workspace_size:
            if self.workspace:
                self.lib.aclrtFree(self.workspace)
                self.workspace, self.workspace_size = ctypes.c_void_p(), 0
            _check(self.lib, "aclrtMalloc",
                   self.lib.aclrtMalloc(ctypes.byref(self.workspace), size, ACL_MEM_MALLOC_NORMAL_ONLY))
            self.workspace_size = size
        return self.workspace

    def __del__(self):
        if self.workspace:
            self.lib.aclrtFree(self.workspace)
        if self.stream:
            self.lib.aclrtDestroyStream(self.stream)


_threads = threading.local()


def _thread_state():
    state = getattr(_threads, "state", None)
    if state is None:
        state = _threads.state = _ThreadState(library())
    return state


class _Handles:
    """aclTensor and aclBoolArray handles, destroyed on leaving the with block."""

    def __init__(self, lib):
        self.lib, self.tensors, self.arrays = lib, [], []

    def tensor(self, view, fmt):
        rank = len(view.shape)
        dims = (ctypes.c_int64 * rank)(*view.shape)
        strides = (ctypes.c_int64 * rank)(*view.strides)
        # The storage is exactly what the view reaches, starting at its first element.
        empty = any(d == 0 for d in view.shape)
        extent = 0 if empty else 1 + sum((d - 1) * s for d, s in zip(view.shape, view.strides))
        storage = (ctypes.c_int64 * 1)(extent)
        if view.dtype not in ACL_DTYPES:
            raise TypeError(f"gridsampler3d: dtype {view.dtype} has no ACL counterpart")
        handle = self.lib.aclCreateTensor(dims, rank, ACL_DTYPES[view.dtype], strides, 0, fmt, storage, 1,
                                          ctypes.c_void_p(view.data or None))
        if not handle:
            raise GridSamplerError("aclCreateTensor", 161002, _message(self.lib))
        self.tensors.append(handle)
        return handle

    def bool_array(self, values):
        array = (ctypes.c_bool * len(values))(*values)
        handle = self.lib.aclCreateBoolArray(array, len(values))
        if not handle:
            raise GridSamplerError("aclCreateBoolArray", 161001, _message(self.lib))
        self.arrays.append(handle)
        return handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for handle in self.tensors:
            self.lib.aclDestroyTensor(handle)
        for handle in self.arrays:
            self.lib.aclDestroyBoolArray(handle)


def _run(lib, api, get_workspace_size, launch, arguments):
    """Both phases of an aclnn call, on this thread's stream, waiting for the result; returns
    the workspace size the library asked for."""
    state = _thread_state()
    size, executor = ctypes.c_uint64(), ctypes.c_void_p()
    _check(lib, api + "GetWorkspaceSize", get_workspace_size(*arguments, ctypes.byref(size), ctypes.byref(executor)))
    workspace = state.workspace_of(size.value) if size.value else ctypes.c_void_p()
    _check(lib, api, launch(workspace, size.value, executor, state.stream))
    _check(lib, "aclrtSynchronizeStream", lib.aclrtSynchronizeStream(state.stream))
    return size.value


TRICUBIC = _arguments.INTERPOLATION_CODES["bicubic"]  # the code that only the gs3d extension calls take


def _sampler_api(interpolation, backward=False):
    """aclnnGridSampler3D[Backward], or its gs3d extension for tricubic, which aclnn refuses."""
    return ("gs3d" if interpolation == TRICUBIC else "aclnn") + "GridSampler3D" + ("Backward" if backward else "")


def forward(input, grid, output, interpolation, padding, align_corners):
    """aclnnGridSampler3D (gs3dGridSampler3D for tricubic) on views: input and output (N, C, D,
    H, W), grid (N, Do, Ho, Wo, 3). Returns the workspace size in bytes."""
    lib = library()
    api = _sampler_api(interpolation)
    with _Handles(lib) as h:
        arguments = (h.tensor(input, ACL_FORMAT_NCDHW), h.tensor(grid, ACL_FORMAT_ND), interpolation, padding,
                     bool(align_corners), h.tensor(output, ACL_FORMAT_NCDHW))
        return _run(lib, api, getattr(lib, api + "GetWorkspaceSize"), getattr(lib, api), arguments)


def backward(grad_output, input, grid, input_grad, grid_grad, interpolation, padding, align_corners, output_mask):
    """aclnnGridSampler3DBackward (gs3dGridSampler3DBackward for tricubic) on views. An output
    the mask leaves out may be a view without data (data 0): the library neither reads nor
    writes it."""
    lib = library()
    api = _sampler_api(interpolation, backward=True)
    with _Handles(lib) as h:
        arguments = (h.tensor(grad_output, ACL_FORMAT_NCDHW), h.tensor(input, ACL_FORMAT_NCDHW),
                     h.tensor(grid, ACL_FORMAT_ND), interpolation, padding, bool(align_corners),
                     h.bool_array(output_mask), h.tensor(input_grad, ACL_FORMAT_NCDHW),
                     h.tensor(grid_grad, ACL_FORMAT_ND))
        return _run(lib, api, getattr(lib, api + "GetWorkspaceSize"), getattr(lib, api), arguments)


def warp_forward(kind, input, parameters, output, interpolation, padding, align_corners):
    """gs3dAffineWarp3D (kind "affine", parameters theta (N, 3, 4)) or gs3dDisplacementWarp3D
    (kind "displacement", parameters flow (N, 3, Do, Ho, Wo); align_corners is not passed, it
    is always true) on views. Returns the workspace size in bytes."""
    lib = library()
    api = "gs3dAffineWarp3D" if kind == "affine" else "gs3dDisplacementWarp3D"
    with _Handles(lib) as h:
        fmt = ACL_FORMAT_ND if kind == "affine" else ACL_FORMAT_NCDHW
        arguments = [h.tensor(input, ACL_FORMAT_NCDHW), h.tensor(parameters, fmt), interpolation, padding]
        if kind == "affine":
            arguments.append(bool(align_corners))
        arguments.append(h.tensor(output, ACL_FORMAT_NCDHW))
        return _run(lib, api, getattr(lib, api + "GetWorkspaceSize"), getattr(lib, api), arguments)


def warp_backward(kind, grad_output, input, parameters, input_grad, parameters_grad, interpolation, padding,
                  align_corners, output_mask):
    """The warps' backward on views (see warp_forward); an output the mask leaves out may be a
    view without data."""
    lib = library()
    api = "gs3dAffineWarp3DBackward" if kind == "affine" else "gs3dDisplacementWarp3DBackward"
    with _Handles(lib) as h:
        fmt = ACL_FORMAT_ND if kind == "affine" else ACL_FORMAT_NCDHW
        arguments = [h.tensor(grad_output, ACL_FORMAT_NCDHW), h.tensor(input, ACL_FORMAT_NCDHW),
                     h.tensor(parameters, fmt), interpolation, padding]
        if kind == "affine":
            arguments.append(bool(align_corners))
        arguments += [h.bool_array(output_mask), h.tensor(input_grad, ACL_FORMAT_NCDHW),
                      h.tensor(parameters_grad, fmt)]
        return _run(lib, api, getattr(lib, api + "GetWorkspaceSize"), getattr(lib, api), arguments)


def set_deterministic(enabled):
    lib = library()
    _check(lib, "aclrtCtxSetSysParamOpt", lib.aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1 if enabled else 0))


def is_deterministic():
    lib = library()
    value = ctypes.c_int64()
    _check(lib, "aclrtCtxGetSysParamOpt", lib.aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, ctypes.byref(value)))
    return bool(value.value)


def set_num_threads(count):
    lib = library()
    _check(lib, "gs3dSetNumThreads", lib.gs3dSetNumThreads(int(count)))


def get_num_threads():
    lib = library()
    value = ctypes.c_int32()
    _check(lib, "gs3dGetNumThreads", lib.gs3dGetNumThreads(ctypes.byref(value)))
    return value.value
