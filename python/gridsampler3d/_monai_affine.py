"""MONAI's Affine, RandAffine and RandAffined on the fused affine warp (see _monai for the patch).

MONAI builds a (4, D, H, W) grid of centred voxel coordinates, multiplies it by the transform's
4 x 4 matrix, scales it to [-1, 1] in Resample and only then calls grid_sample. The replacements
here ask MONAI for the matrix alone (its grid builders' lazy mode, the same random draws), turn
it into grid_sample's (3, 4) theta, and sample with gs3dAffineWarp3D; the metadata goes through
MONAI's own affine_func, so the output's affine and applied operations are MONAI's. A call that
the fused warp does not serve goes to MONAI's function unchanged, before any random draw.
"""
import numpy as np
import torch

from monai.config import USE_COMPILED
from monai.data.meta_tensor import MetaTensor
from monai.data.utils import to_affine_nd
from monai.data.meta_obj import get_track_meta
from monai.transforms.spatial.functional import affine_func
from monai.transforms.spatial.array import RandAffineGrid
from monai.transforms.utils import resolves_modes
from monai.utils import TransformBackends, convert_to_dst_type, convert_to_tensor, ensure_tuple, fall_back_tuple
from monai.utils.type_conversion import get_equivalent_dtype

FUSED_MODES = ("bilinear", "nearest")
IDENTITY = torch.eye(4, dtype=torch.float64)
FUSED_PADDINGS = ("zeros", "border", "reflection")


def torch_modes(mode, padding_mode):
    """MONAI's resolution of (mode, padding_mode) to grid_sample's names, or None where MONAI would
    not call torch's grid_sample with a mode and padding the fused warp has."""
    try:
        backend, interpolation, padding, _ = resolves_modes(mode, padding_mode, backend=None, use_compiled=USE_COMPILED)
    except Exception:  # noqa: BLE001 (MONAI's own call raises it again, with its message)
        return None
    if USE_COMPILED or backend != TransformBackends.TORCH:
        return None
    interpolation, padding = str(interpolation), str(padding)
    if interpolation not in FUSED_MODES or padding not in FUSED_PADDINGS:
        return None
    return interpolation, padding


class GridSettings:
    """The dtype and alignment of the grid MONAI would build: an AffineGrid's own, or for a
    RandAffineGrid those of the AffineGrid its eager call makes (its dtype, alignment False).
    dtype is what the grid ends in: create_grid's float64 where the AffineGrid has none."""

    def __init__(self, dtype, align_corners):
        dtype = get_equivalent_dtype(dtype, torch.Tensor)
        dtype = dtype if dtype in (torch.float16, torch.float64, None) else torch.float32  # as AffineGrid
        self.dtype, self.align_corners = dtype or torch.float64, bool(align_corners)

    @staticmethod
    def of(grid_builder):
        if isinstance(grid_builder, RandAffineGrid):
            return GridSettings(grid_builder.dtype, False)
        return GridSettings(grid_builder.dtype, grid_builder.align_corners)


def sampling_dtype(resampler, image_dtype, coordinates_dtype):
    """The dtype the fused warp samples in, or None where MONAI's Resample computes in one the
    warp does not take. MONAI samples its float32 grid in float64 by default and returns float32;
    the float32 grid bounds that result's accuracy, so a float32 image with a float32 grid is
    sampled in float32 (test_monai measures both against a float64 computation)."""
    compute = get_equivalent_dtype(resampler.dtype or image_dtype, torch.Tensor)
    if compute not in (torch.float32, torch.float64):
        return None
    wide = compute == torch.float64 and torch.float64 in (image_dtype, coordinates_dtype)
    return torch.float64 if wide else torch.float32


def serves_image(img):
    """A channel-first 3-D CPU tensor with no pending lazy operations."""
    if not isinstance(img, torch.Tensor) or img.dim() != 4 or img.device.type != "cpu":
        return False
    return not (isinstance(img, MetaTensor) and img.pending_operations)


def theta_of(matrix, image_size, out_size, norm_coords):
    """grid_sample's (1, 3, 4) theta, in float64, for MONAI's sampling with `matrix`.

    MONAI samples output voxel o at matrix @ (o - (O - 1) / 2, 1), scaled per input axis k by
    2 / max(2, S_k) when norm_coords (Resample's normalisation). affine_grid's base coordinate b
    of that voxel (either alignment, with AffineGrid's own align_corners scale) is 2 (o - (O - 1)
    / 2) / O, so theta's columns are the matrix's times O_j / 2 and the scale, and theta lists
    the axes as (x, y, z), MONAI's last axis first. (An output axis of one voxel: MONAI's centred
    coordinate and affine_grid's base are both 0.)"""
    matrix = torch.as_tensor(np.asarray(matrix, dtype=np.float64))
    theta = torch.zeros(1, 3, 4, dtype=torch.float64)
    for k in range(3):
        scale = 2.0 / max(2, image_size[k]) if norm_coords else 1.0
        for j in range(3):
            theta[0, 2 - k, 2 - j] = matrix[k, j] * out_size[j] / 2 * scale
        theta[0, 2 - k, 3] = matrix[k, 3] * scale
    return theta


class FusedResample:
    """Stands for MONAI's Resample in affine_func: the attributes affine_func reads, and a call
    that samples img with the fused affine warp for `matrix` instead of reading a grid."""

    def __init__(self, resampler, settings, out_size):
        self.resampler, self.settings, self.out_size = resampler, settings, tuple(int(s) for s in out_size)
        self.align_corners, self.device = resampler.align_corners, resampler.device
        self.matrix = IDENTITY

    def __call__(self, img, grid=None, mode=None, padding_mode=None):
        from . import affine_warp

        img = convert_to_tensor(img, track_meta=get_track_meta())
        interpolation, padding = torch_modes(mode, padding_mode)
        dtype = sampling_dtype(self.resampler, img.dtype, self.settings.dtype)
        plain = img.as_tensor() if isinstance(img, MetaTensor) else img
        theta = theta_of(self.matrix, tuple(plain.shape[1:]), self.out_size, self.resampler.norm_coords)
        out = affine_warp(plain.to(dtype).unsqueeze(0), theta.to(dtype), size=(1, plain.shape[0]) + self.out_size,
                          mode=interpolation, padding_mode=padding, align_corners=self.settings.align_corners)[0]
        return convert_to_dst_type(out, dst=img, dtype=np.float32)[0]


def fused_resample(resampler, grid_builder, img, out_size, mode, padding_mode):
    """A FusedResample for this call, or None where the fused warp does not serve it (MONAI's
    code runs then)."""
    settings = GridSettings.of(grid_builder)
    if not serves_image(img) or len(out_size) != 3 or torch_modes(mode, padding_mode) is None:
        return None
    if settings.dtype not in (torch.float32, torch.float64) or sampling_dtype(resampler, img.dtype, settings.dtype) is None:
        return None
    if bool(resampler.align_corners) != settings.align_corners:
        return None  # the grid's and the sampling's alignments differ: no single theta
    return FusedResample(resampler, settings, out_size)


def eager_dtype(matrix, grid_builder):
    """A matrix from the lazy grid builder in the dtype the eager one returns (its grid's)."""
    return convert_to_tensor(to_affine_nd(3, matrix), dtype=GridSettings.of(grid_builder).dtype, track_meta=False)


def random_matrix(rand_affine_grid, spatial_size, randomize=True):
    """RandAffineGrid's call without its grid: the same random draws, the matrix kept as the
    eager call keeps it."""
    rand_affine_grid(spatial_size, randomize=randomize, lazy=True)
    rand_affine_grid.affine = eager_dtype(rand_affine_grid.affine, rand_affine_grid)
    return rand_affine_grid.affine


def channel_first_call(img, spatial_size, default_size):
    """img as MONAI's transforms take it, and the output size they fall back to."""
    img = convert_to_tensor(img, track_meta=get_track_meta())
    img_size = img.peek_pending_shape() if isinstance(img, MetaTensor) else img.shape[1:]
    return img, img_size, fall_back_tuple(default_size if spatial_size is None else spatial_size, img_size)


def affine_call(stock):
    def __call__(self, img, spatial_size=None, mode=None, padding_mode=None, lazy=None):
        img, _, sp_size = channel_first_call(img, spatial_size, self.spatial_size)
        _mode = mode if mode is not None else self.mode
        _padding_mode = padding_mode if padding_mode is not None else self.padding_mode
        lazy_ = self.lazy if lazy is None else lazy
        resample = None if lazy_ else fused_resample(self.resampler, self.affine_grid, img, sp_size, _mode, _padding_mode)
        if resample is None:
            return stock(self, img, spatial_size, mode, padding_mode, lazy)
        resample.matrix = eager_dtype(self.affine_grid(spatial_size=sp_size, lazy=True)[1], self.affine_grid)
        return affine_func(img, resample.matrix, None, resample, sp_size, _mode, _padding_mode, True,
                           self.image_only, lazy=False, transform_info=self.get_transform_info())

    return __call__


class DeferredGrid:
    """What the patched RandAffined hands the patched RandAffine instead of a grid: the matrix
    the grid would have been built from (None: the identity grid)."""

    def __init__(self, matrix):
        self.matrix = matrix



def rand_affine_call(stock):
    def __call__(self, img, spatial_size=None, mode=None, padding_mode=None, randomize=True, grid=None, lazy=None):
        img, ori_size, sp_size = channel_first_call(img, spatial_size, self.spatial_size)
        _mode = mode if mode is not None else self.mode
        _padding_mode = padding_mode if padding_mode is not None else self.padding_mode
        lazy_ = self.lazy if lazy is None else lazy
        deferred = isinstance(grid, DeferredGrid)
        resample = None
        if not lazy_ and (grid is None or deferred):
            resample = fused_resample(self.resampler, self.rand_affine_grid, img, sp_size, _mode, _padding_mode)
        if resample is None:  # decided before any random draw, so MONAI's call draws as it always does
            return stock(self, img, spatial_size, mode, padding_mode, randomize, grid, lazy)
        if randomize:
            self.randomize()
        do_resampling = self._do_transform or (sp_size != ensure_tuple(ori_size))
        if deferred:
            sampled = grid.matrix
        else:
            sampled = random_matrix(self.rand_affine_grid, sp_size, randomize) if self._do_transform else None
        resample.matrix = IDENTITY if sampled is None else sampled
        return affine_func(img, self.rand_affine_grid.get_transformation_matrix(), None, resample, sp_size, _mode,
                           _padding_mode, do_resampling, True, lazy=False, transform_info=self.get_transform_info())

    return __call__


def rand_affined_call(stock):
    def __call__(self, data, lazy=None):
        d = dict(data)
        first_key = self.first_key(d)
        lazy_ = self.lazy if lazy is None else lazy
        if first_key == () or lazy_ or not _serves_every_key(self, d):
            return stock(self, data, lazy)
        self.randomize(None)
        self.rand_affine.randomize()  # all the keys share the same random affine, as in MONAI
        item = d[first_key]
        spatial_size = item.peek_pending_shape() if isinstance(item, MetaTensor) else item.shape[1:]
        sp_size = fall_back_tuple(self.rand_affine.spatial_size, spatial_size)
        do_resampling = self._do_transform or (sp_size != ensure_tuple(spatial_size))
        grid = None
        if do_resampling:
            grid = DeferredGrid(random_matrix(self.rand_affine.rand_affine_grid, sp_size) if self._do_transform else None)
        for key, mode, padding_mode in self.key_iterator(d, self.mode, self.padding_mode):
            if do_resampling:
                d[key] = self.rand_affine(d[key], None, mode, padding_mode, True, grid, lazy=lazy_)
            else:
                d[key] = convert_to_tensor(d[key], track_meta=get_track_meta(), dtype=torch.float32)
            self._do_transform = do_resampling
            self.push_transform(d[key], replace=True, lazy=lazy_)
        return d

    return __call__


def _serves_every_key(transform, d):
    """Every key is a tensor the fused warp serves, all of one spatial size, with a mode and
    padding it has: RandAffined shares one grid between its keys, so it is all or none."""
    sizes = set()
    for key, mode, padding_mode in transform.key_iterator(d, transform.mode, transform.padding_mode):
        img = d[key]
        if not isinstance(img, torch.Tensor):
            return False
        size = tuple(img.peek_pending_shape() if isinstance(img, MetaTensor) else img.shape[1:])
        sizes.add(size)
        out_size = fall_back_tuple(transform.rand_affine.spatial_size, size)
        rand_affine = transform.rand_affine
        if fused_resample(rand_affine.resampler, rand_affine.rand_affine_grid, img, out_size, mode, padding_mode) is None:
            return False
    return len(sizes) <= 1
