"""patch_monai: MONAI's Affine, RandAffine (so Affined and RandAffined) and Warp on the fused warps.

MONAI 1.3.0 spends most of an affine augmentation building the (3, D, H, W) grid, which
patch_torch cannot touch; the fused warps compute the coordinates in the sampler instead. The
patch replaces four methods on MONAI's classes (so instances made before patching use it too)
with functions that serve the calls the fused warps compute and hand every other call to
MONAI's own method unchanged (see _monai_affine and warp_forward for which calls).
"""
import threading

import torch

SUPPORTED_MONAI_VERSIONS = ("1.3.0",)  # the versions test_monai has covered

_lock = threading.Lock()
_originals = {}  # (class, method name) -> MONAI's function, filled on the first patch
_patched = {}  # (class, method name) -> its replacement, made once


def _monai():
    try:
        import monai
    except ImportError as error:
        raise ImportError("gridsampler3d.patch_monai: MONAI is not importable (" + str(error) + ")") from error
    if monai.__version__ not in SUPPORTED_MONAI_VERSIONS:
        raise RuntimeError(f"gridsampler3d.patch_monai: MONAI {monai.__version__} is not one the patch was tested "
                           f"with ({', '.join(SUPPORTED_MONAI_VERSIONS)}); it patches MONAI's internals, so it "
                           "refuses rather than change code it does not know. Nothing was patched.")
    return monai


def warp_forward(stock):
    """Warp.forward: PyTorch's native path (MONAI without its compiled extension) for 5-D CPU
    tensors of one dtype (float32 or float64), a displacement field of the image's size (every
    spatial size at least 2), mode bilinear or nearest and no jitter, on the displacement warp,
    whose coordinates are MONAI's: (d, h, w) + ddf normalised with align_corners=True."""
    from monai.networks.blocks import warp as warp_module

    def forward(self, image, ddf):
        if _warp_serves(self, image, ddf, warp_module.USE_COMPILED):
            from . import displacement_warp
            return displacement_warp(image, ddf, mode=self._interp_mode, padding_mode=self._padding_mode)
        return stock(self, image, ddf)

    return forward


def _warp_serves(warp, image, ddf, use_compiled):
    if use_compiled or warp.jitter or type(image) is not torch.Tensor or type(ddf) is not torch.Tensor:
        return False
    if warp._interp_mode not in ("bilinear", "nearest") or warp._padding_mode not in ("zeros", "border", "reflection"):
        return False
    if image.dim() != 5 or image.device.type != "cpu" or ddf.device.type != "cpu":
        return False
    if image.dtype not in (torch.float32, torch.float64) or ddf.dtype != image.dtype:
        return False
    return tuple(ddf.shape) == (image.shape[0], 3) + tuple(image.shape[2:]) and min(image.shape[2:]) >= 2


def _replacements(monai):
    from monai.networks.blocks import Warp
    from monai.transforms import Affine, RandAffine, RandAffined
    from . import _monai_affine

    return [(Affine, "__call__", _monai_affine.affine_call), (RandAffine, "__call__", _monai_affine.rand_affine_call),
            (RandAffined, "__call__", _monai_affine.rand_affined_call), (Warp, "forward", warp_forward)]


def is_patched():
    return bool(_originals) and any(cls.__dict__[name] is not _originals[cls, name] for cls, name in _originals)


def _set(patched):
    """Installs or removes the replacements; returns whether they were installed before."""
    with _lock:
        monai = _monai()
        was_patched = is_patched()
        if patched and not was_patched:
            for cls, name, make in _replacements(monai):
                if (cls, name) not in _patched:
                    _originals[cls, name] = stock = cls.__dict__[name]
                    _patched[cls, name] = replacement = make(stock)
                    replacement.__name__, replacement.__qualname__ = stock.__name__, stock.__qualname__
                    replacement.__doc__ = ("Patched by gridsampler3d.patch_monai(): served by the fused warps where "
                                           "they apply, by MONAI otherwise.\n\n" + (stock.__doc__ or ""))
                setattr(cls, name, _patched[cls, name])
        elif not patched and was_patched:
            for (cls, name), stock in _originals.items():
                setattr(cls, name, stock)
        return was_patched

