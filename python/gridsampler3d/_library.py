"""Finds libgridsampler3d.so and declares the C functions the package calls.

Search order (the first that exists wins):
  1. GRIDSAMPLER3D_LIBRARY: the path of the library itself;
  2. GRIDSAMPLER3D_PREFIX: an install prefix (PREFIX/lib/libgridsampler3d.so);
  3. the copy inside the package, which `pip install ./python` builds and puts there;
  4. the build tree of the checkout, when the package runs from its python/ folder
     (build/libgridsampler3d.so);
  5. the installed prefixes: sys.prefix, /usr/local, /usr (lib/ and lib/<multiarch>/);
  6. the dynamic loader's own search (ldconfig, LD_LIBRARY_PATH).
"""
import ctypes
import ctypes.util
import os
import sys
import sysconfig

LIBRARY_NAME = "libgridsampler3d.so"

_i64p = ctypes.POINTER(ctypes.c_int64)
_vp = ctypes.c_void_p
_u64p = ctypes.POINTER(ctypes.c_uint64)
_vpp = ctypes.POINTER(ctypes.c_void_p)

# name: (restype, argtypes), as the headers in include/ declare them.
_SIGNATURES = {
    "aclInit": (ctypes.c_int, [ctypes.c_char_p]),
    "aclFinalize": (ctypes.c_int, []),
    "aclrtSetDevice": (ctypes.c_int, [ctypes.c_int32]),
    "aclrtCreateStream": (ctypes.c_int, [_vpp]),
    "aclrtDestroyStream": (ctypes.c_int, [_vp]),
    "aclrtSynchronizeStream": (ctypes.c_int, [_vp]),
    "aclrtMalloc": (ctypes.c_int, [_vpp, ctypes.c_size_t, ctypes.c_int]),
    "aclrtFree": (ctypes.c_int, [_vp]),
    "aclrtCtxSetSysParamOpt": (ctypes.c_int, [ctypes.c_int, ctypes.c_int64]),
    "aclrtCtxGetSysParamOpt": (ctypes.c_int, [ctypes.c_int, _i64p]),
    "aclGetRecentErrMsg": (ctypes.c_char_p, []),
    "aclCreateTensor": (_vp, [_i64p, ctypes.c_uint64, ctypes.c_int, _i64p, ctypes.c_int64, ctypes.c_int, _i64p,
                              ctypes.c_uint64, _vp]),
    "aclDestroyTensor": (ctypes.c_int, [_vp]),
    "aclCreateBoolArray": (_vp, [ctypes.POINTER(ctypes.c_bool), ctypes.c_uint64]),
    "aclDestroyBoolArray": (ctypes.c_int, [_vp]),
    "aclnnGridSampler3DGetWorkspaceSize": (ctypes.c_int, [_vp, _vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_bool,
                                                          _vp, _u64p, _vpp]),
    "aclnnGridSampler3D": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _vp]),
    "aclnnGridSampler3DBackwardGetWorkspaceSize": (ctypes.c_int, [_vp, _vp, _vp, ctypes.c_int64, ctypes.c_int64,
                                                                  ctypes.c_bool, _vp, _vp, _vp, _u64p, _vpp]),
    "aclnnGridSampler3DBackward": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _vp]),
    "gs3dGridSampler3DGetWorkspaceSize": (ctypes.c_int, [_vp, _vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_bool,
                                                         _vp, _u64p, _vpp]),
    "gs3dGridSampler3D": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _vp]),
    "gs3dGridSampler3DBackwardGetWorkspaceSize": (ctypes.c_int, [_vp, _vp, _vp, ctypes.c_int64, ctypes.c_int64,
                                                                 ctypes.c_bool, _vp, _vp, _vp, _u64p, _vpp]),
    "gs3dGridSampler3DBackward": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _vp]),
    "gs3dAffineWarp3DGetWorkspaceSize": (ctypes.c_int, [_vp, _vp, ctypes.c_int64, ctypes.c_int64, ctypes.c_bool, _vp,
                                                        _u64p, _vpp]),
    "gs3dAffineWarp3D": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _vp]),
    "gs3dAffineWarp3DBackwardGetWorkspaceSize": (ctypes.c_int, [_vp, _vp, _vp, ctypes.c_int64, ctypes.c_int64,
                                                                ctypes.c_bool, _vp, _vp, _vp, _u64p, _vpp]),
    "gs3dAffineWarp3DBackward": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _vp]),
    "gs3dDisplacementWarp3DGetWorkspaceSize": (ctypes.c_int, [_vp, _vp, ctypes.c_int64, ctypes.c_int64, _vp, _u64p,
                                                              _vpp]),
    "gs3dDisplacementWarp3D": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _vp]),
    "gs3dDisplacementWarp3DBackwardGetWorkspaceSize": (ctypes.c_int, [_vp, _vp, _vp, ctypes.c_int64, ctypes.c_int64,
                                                                      _vp, _vp, _vp, _u64p, _vpp]),
    "gs3dDisplacementWarp3DBackward": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _vp]),
    "gs3dSetNumThreads": (ctypes.c_int, [ctypes.c_int32]),
    "gs3dGetNumThreads": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int32)]),
}


def _package_candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    checkout = os.path.dirname(os.path.dirname(here))  # python/gridsampler3d -> the checkout
    return [os.path.join(here, LIBRARY_NAME), os.path.join(checkout, "build", LIBRARY_NAME)]


def _prefix_candidates(prefix):
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = [os.path.join(prefix, "lib")]
    if multiarch:
        dirs.append(os.path.join(prefix, "lib", multiarch))
    return [os.path.join(d, LIBRARY_NAME) for d in dirs]


def candidates():
    """The paths tried, in order; the loader's own search comes after them."""
    paths = []
    if os.environ.get("GRIDSAMPLER3D_LIBRARY"):
        return [os.environ["GRIDSAMPLER3D_LIBRARY"]]  # explicit: nothing else is tried
    if os.environ.get("GRIDSAMPLER3D_PREFIX"):
        paths += _prefix_candidates(os.environ["GRIDSAMPLER3D_PREFIX"])
    paths += _package_candidates()
    for prefix in (sys.prefix, "/usr/local", "/usr"):
        paths += _prefix_candidates(prefix)
    return paths


def load():
    """Loads the library and declares its functions; raises OSError naming what was tried."""
    tried = candidates()
    path = next((p for p in tried if os.path.isfile(p)), None)
    if path is None and not os.environ.get("GRIDSAMPLER3D_LIBRARY"):
        path = ctypes.util.find_library("gridsampler3d")
    if path is None:
        raise OSError("gridsampler3d: libgridsampler3d.so not found; build it (cmake) or set "
                      "GRIDSAMPLER3D_LIBRARY or GRIDSAMPLER3D_PREFIX. Tried: " + ", ".join(tried))
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    lib.gridsampler3d_path = path
    return lib
