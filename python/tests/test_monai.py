"""patch_monai against stock MONAI 1.3.0 (the copy in ../shared/thirdparty, or an importable one).

Values: MONAI samples its float32 grid, so stock MONAI is not exact either. The reference is
MONAI's own code with every grid and sampling in float64 (the same matrix, the same seed); the
patched transform must be at most twice as far from it as stock MONAI is, plus 8 float32 ulps
of the largest value for the output's rounding to float32 (see monai_close). Nearest (label
maps): equal to stock but for voxels whose float64 source index lies within 1e-4 of a tie,
where stock's float32 grid and our coordinates may round apart; the test counts them.
"""
import os
import sys

import numpy as np
import pytest
import torch

import gridsampler3d

SHARED_MONAI = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "thirdparty", "monai-1.3.0")
if os.path.isdir(SHARED_MONAI) and SHARED_MONAI not in sys.path:
    sys.path.insert(0, os.path.abspath(SHARED_MONAI))
monai = pytest.importorskip("monai", reason="MONAI is not importable and ../shared/thirdparty/monai-1.3.0 is absent")
if monai.__version__ != "1.3.0":
    pytest.skip(f"these tests compare with MONAI 1.3.0, found {monai.__version__}", allow_module_level=True)

from monai.data import MetaTensor  # noqa: E402
from monai.transforms import Affine, Affined, AffineGrid, RandAffine, RandAffined  # noqa: E402
from torch_reference import source_index  # noqa: E402

MODES, PADDINGS = ("bilinear", "nearest"), ("zeros", "border", "reflection")
TIE_DISTANCE = 1e-4  # index units: float32 grid coordinates of these sizes are off by under 1e-5
IN_SIZE, OUT_SIZE = (13, 16, 11), (12, 15, 17)


def image(dtype=torch.float32, channels=2, size=IN_SIZE, seed=0):
    generator = torch.Generator().manual_seed(seed)
    data = torch.rand((channels,) + size, generator=generator, dtype=torch.float64).to(dtype)
    return MetaTensor(data, affine=torch.diag(torch.tensor([1.5, 0.8, 2.0, 1.0], dtype=torch.float64)))


def label_map(size=IN_SIZE, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return MetaTensor(torch.randint(0, 5, (1,) + size, generator=generator).to(torch.float32))


def monai_close(ours, stock, exact, what):
    """Ours at most twice stock's distance from the float64 computation, plus 8 float32 ulps."""
    ours, stock, exact = (torch.as_tensor(t).to(torch.float64) for t in (ours, stock, exact))
    allowance = 8 * 2.0 ** -23 * max(1.0, exact.abs().max().item())
    stock_error = (stock - exact).abs().max().item()
    our_error = (ours - exact).abs().max().item()
    assert our_error <= 2 * stock_error + allowance, f"{what}: ours {our_error:.3g} from float64, stock {stock_error:.3g}"


def near_ties(matrix, in_size, out_size, align, norm=True):
    """(D, H, W) mask of output voxels whose float64 source index is within TIE_DISTANCE of a
    tie on some axis, from MONAI's own float64 grid for `matrix`."""
    grid, _ = AffineGrid(affine=torch.as_tensor(matrix, dtype=torch.float64), dtype=torch.float64,
                         align_corners=align)(out_size)
    mask = torch.zeros(out_size, dtype=torch.bool)
    for k, size in enumerate(in_size):
        normalised = grid[k] * (2.0 / max(2, size)) if norm else grid[k]
        index = source_index(normalised, size, 0, align)
        mask |= ((index - torch.floor(index)) - 0.5).abs() < TIE_DISTANCE
    return mask


def assert_labels_equal_but_ties(ours, stock, ties, what):
    differ = (torch.as_tensor(ours) != torch.as_tensor(stock)).any(dim=0)
    assert not (differ & ~ties).any(), f"{what}: {int((differ & ~ties).sum())} voxels away from a tie differ"
    return int(differ.sum()), int(ties.sum())


def assert_same_meta(ours, stock):
    assert type(ours) is type(stock) and ours.dtype == stock.dtype and ours.shape == stock.shape
    assert torch.equal(ours.affine, stock.affine)
    assert same_structure(ours.applied_operations, stock.applied_operations)
    assert same_structure({k: v for k, v in ours.meta.items()}, {k: v for k, v in stock.meta.items()})


def same_structure(a, b):
    """Equal nested metadata; "id" (the id() of the transform object that recorded an operation)
    is the one entry that differs between two transform objects."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_structure(a[k], b[k]) for k in a if k != "id")
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(same_structure, a, b))
    if isinstance(a, (torch.Tensor, np.ndarray)):
        return type(a) is type(b) and a.dtype == b.dtype and bool((torch.as_tensor(a) == torch.as_tensor(b)).all())
    return a == b


@pytest.fixture(autouse=True)
def unpatched():
    """Every test starts and ends with MONAI's own methods."""
    gridsampler3d.patch_monai(False)
    yield
    gridsampler3d.patch_monai(False)


def stock_and_patched(make, call):
    """call(make()) without and with the patch: two transforms from one recipe, two results."""
    stock_transform, patched_transform = make(), make()
    stock = call(stock_transform)
    with gridsampler3d.patch_monai():
        ours = call(patched_transform)
    return (stock_transform, stock), (patched_transform, ours)


AFFINES = {
    "identity": dict(),
    "rotate_shear_scale": dict(rotate_params=(0.3, -0.2, 0.5), shear_params=(0.05, 0.0, -0.1, 0.02, 0.0, 0.04),
                               translate_params=(1.5, -2.0, 0.7), scale_params=(1.1, 0.9, 1.2)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("params", list(AFFINES))
@pytest.mark.parametrize("align", [False, True])
def test_affine_matches_stock(mode, padding, dtype, params, align):
    img = image(dtype)
    make = lambda transform_dtype=dtype: Affine(**AFFINES[params], spatial_size=OUT_SIZE, mode=mode,  # noqa: E731
                                                padding_mode=padding, dtype=transform_dtype, align_corners=align)
    (stock_t, stock), (ours_t, ours) = stock_and_patched(make, lambda t: t(img)[0])
    assert_same_meta(ours, stock)
    exact_t = make(torch.float64)
    exact = exact_t(img.to(torch.float64))[0]
    matrix = stock.applied_operations[-1]["extra_info"]["affine"]
    if mode == "nearest":
        assert_labels_equal_but_ties(ours, stock, near_ties(matrix, IN_SIZE, OUT_SIZE, align), "nearest")
    else:
        monai_close(ours, stock, exact, f"{params} {padding} {dtype}")
    stock_back, ours_back = stock_t.inverse(stock), ours_t.inverse(ours)
    assert_same_meta(ours_back, stock_back)
    if mode == "bilinear":
        monai_close(ours_back, stock_back, exact_t.inverse(exact), "inverse")


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("out_size", [(12, 1, 17), (1, 1, 9)])
def test_affine_to_single_voxel_axes(align, out_size):
    """An output axis of one voxel: MONAI's centred coordinate 0 must meet affine_grid's base."""
    img = image()
    make = lambda dtype=torch.float32: Affine(**AFFINES["rotate_shear_scale"], spatial_size=out_size,  # noqa: E731
                                              padding_mode="border", dtype=dtype, align_corners=align)
    (_, stock), (_, ours) = stock_and_patched(make, lambda t: t(img)[0])
    assert_same_meta(ours, stock)
    monai_close(ours, stock, make(torch.float64)(img.to(torch.float64))[0], f"{out_size}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("seed", [0, 7])
def test_rand_affine_matches_stock(mode, padding, dtype, seed):
    img = image(dtype, seed=seed)

    def make():
        transform = RandAffine(prob=1.0, rotate_range=(0.4,) * 3, shear_range=(0.1,) * 6, scale_range=(0.15,) * 3,
                               translate_range=(3,) * 3, spatial_size=OUT_SIZE, mode=mode, padding_mode=padding)
        return transform.set_random_state(seed)

    (stock_t, stock), (ours_t, ours) = stock_and_patched(make, lambda t: t(img))
    assert_same_meta(ours, stock)  # the same matrix: the same random draws
    assert stock_t.R.randint(1 << 30) == ours_t.R.randint(1 << 30), "the random streams went apart"
    exact_t = make()
    exact_t.rand_affine_grid.dtype = np.float64  # MONAI's own grid in float64, the same draws
    exact = exact_t(img.to(torch.float64))
    matrix = stock.applied_operations[-1]["extra_info"]["affine"]
    if mode == "nearest":
        assert_labels_equal_but_ties(ours, stock, near_ties(matrix, IN_SIZE, OUT_SIZE, False), "nearest")
    else:
        monai_close(ours, stock, exact, f"seed {seed} {padding} {dtype}")
    assert_same_meta(ours_t.inverse(ours), stock_t.inverse(stock))


def test_rand_affine_without_transform_resamples_the_identity():
    """prob=0 with another output size: MONAI resamples with the identity grid (and records
    the last matrix drawn, here none: the identity)."""
    img = image()
    make = lambda: RandAffine(prob=0.0, rotate_range=(0.4,) * 3, spatial_size=OUT_SIZE).set_random_state(3)  # noqa: E731
    (_, stock), (_, ours) = stock_and_patched(make, lambda t: t(img))
    assert_same_meta(ours, stock)
    monai_close(ours, stock, stock, "identity")


def test_rand_affined_image_and_label_map():
    data = {"image": image(), "label": label_map()}

    def make():
        transform = RandAffined(keys=("image", "label"), mode=("bilinear", "nearest"), prob=1.0,
                                rotate_range=(0.4,) * 3, scale_range=(0.1,) * 3, translate_range=(2,) * 3,
                                padding_mode="border", spatial_size=OUT_SIZE)
        return transform.set_random_state(11)

    (stock_t, stock), (ours_t, ours) = stock_and_patched(make, lambda t: t(data))
    for key in data:
        assert_same_meta(ours[key], stock[key])
    exact_t = make()
    exact_t.rand_affine.rand_affine_grid.dtype = np.float64
    exact = exact_t({"image": data["image"].to(torch.float64), "label": data["label"]})
    monai_close(ours["image"], stock["image"], exact["image"], "image")
    matrix = stock_t.rand_affine.rand_affine_grid.get_transformation_matrix()
    differ, ties = assert_labels_equal_but_ties(ours["label"], stock["label"],
                                                near_ties(matrix, IN_SIZE, OUT_SIZE, False), "label")
    assert ties < 0.01 * np.prod(OUT_SIZE), f"{ties} near-tie voxels: the tie test is too loose to mean much"
    stock_back, ours_back = stock_t.inverse(stock), ours_t.inverse(ours)
    for key in data:
        assert_same_meta(ours_back[key], stock_back[key])


def test_affined_image_and_label_map():
    data = {"image": image(torch.float64), "label": label_map()}
    params = AFFINES["rotate_shear_scale"]
    make = lambda dtype=torch.float32: Affined(keys=("image", "label"), mode=("bilinear", "nearest"),  # noqa: E731
                                               padding_mode="reflection", spatial_size=OUT_SIZE, dtype=dtype, **params)
    (stock_t, stock), (ours_t, ours) = stock_and_patched(make, lambda t: t(data))
    for key in data:
        assert_same_meta(ours[key], stock[key])
    monai_close(ours["image"], stock["image"], make(torch.float64)(data)["image"], "image")
    matrix = stock["image"].applied_operations[-1]["extra_info"]["affine"]
    assert_labels_equal_but_ties(ours["label"], stock["label"], near_ties(matrix, IN_SIZE, OUT_SIZE, False), "label")
    stock_back, ours_back = stock_t.inverse(stock), ours_t.inverse(ours)
    for key in data:
        assert_same_meta(ours_back[key], stock_back[key])


def smooth_field(shape, amplitude, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    coarse = torch.randn((shape[0], 3, 4, 4, 4), generator=generator, dtype=torch.float64) * amplitude
    field = torch.nn.functional.interpolate(coarse, size=shape[2:], mode="trilinear", align_corners=True)
    return field.to(dtype)


def warp_run(warp, volume, ddf):
    """Forward and backward of a Warp layer: output, d(sum(out * weights))/d(volume, ddf)."""
    volume, ddf = volume.clone().requires_grad_(), ddf.clone().requires_grad_()
    out = warp(volume, ddf)
    weights = torch.linspace(-1, 2, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * weights).sum().backward()
    return out.detach(), volume.grad, ddf.grad


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_warp_values_and_gradients(mode, padding, dtype):
    from monai.networks.blocks import Warp

    shape = (2, 3, 9, 12, 10)
    volume = torch.rand(shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    ddf = smooth_field(shape, 2.5, torch.float64)
    warp = Warp(mode=mode, padding_mode=padding)
    exact = warp_run(warp, volume, ddf)
    stock = warp_run(warp, volume.to(dtype), ddf.to(dtype))
    with gridsampler3d.patch_monai():
        ours = warp_run(warp, volume.to(dtype), ddf.to(dtype))
    names = ("output", "image gradient", "ddf gradient") if mode == "bilinear" else ("output", "image gradient")
    for name, o, s, e in zip(names, ours, stock, exact):
        assert o.dtype == dtype and o.shape == s.shape
        if dtype == torch.float64:
            assert torch.allclose(o, s, rtol=0, atol=64 * 2.0 ** -52 * max(1.0, s.abs().max().item())), name
        else:
            monai_close(o, s, e, f"{name} {padding}")
    if mode == "nearest":
        assert not ours[2].any() and not stock[2].any(), "nearest has no ddf gradient"


def test_dvf2ddf_uses_the_patched_warp():
    """DVF2DDF's scaling and squaring runs Warp seven times: the same field as stock."""
    from monai.networks.blocks import DVF2DDF

    dvf = smooth_field((1, 3, 10, 9, 11), 4.0, torch.float32)
    stock = DVF2DDF()(dvf)
    with gridsampler3d.patch_monai():
        ours = DVF2DDF()(dvf)
    exact = DVF2DDF()(dvf.to(torch.float64))
    monai_close(ours, stock, exact, "ddf")


def forbid_fused_warps(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a call the patch does not serve reached the fused warp")

    monkeypatch.setattr(gridsampler3d, "affine_warp", refuse)
    monkeypatch.setattr(gridsampler3d, "displacement_warp", refuse)


def outcome(call):
    """A call's result, or the type of what it raised."""
    try:
        return call()
    except Exception as error:  # noqa: BLE001
        return type(error)


def assert_same_outcome(call, expected):
    if isinstance(expected, type):
        with pytest.raises(expected):
            call()
        return
    ours = call()
    ours, expected = (torch.as_tensor(t[0] if isinstance(t, tuple) else t) for t in (ours, expected))
    assert torch.equal(torch.isnan(ours), torch.isnan(expected))
    assert torch.equal(ours.nan_to_num(), expected.nan_to_num())


AFFINE_CALLS_MONAI_KEEPS = {  # each with MONAI's own outcome, a result or an error
    "2-D image": (dict(rotate_params=0.2), lambda: MetaTensor(torch.rand(1, 12, 14))),
    "spline mode": (dict(rotate_params=(0.2, 0.1, -0.3), mode=3), image),
    "bicubic (torch refuses it in 3-D)": (dict(rotate_params=(0.2, 0.1, -0.3), mode="bicubic"), image),
    "lazy": (dict(rotate_params=(0.2, 0.1, -0.3), lazy=True), image),
    "float16 grid (MONAI raises)": (dict(rotate_params=(0.2, 0.1, -0.3), dtype=torch.float16), image),
}


@pytest.mark.parametrize("case", list(AFFINE_CALLS_MONAI_KEEPS))
def test_unserved_affine_calls_run_monai(monkeypatch, case):
    kwargs, make_image = AFFINE_CALLS_MONAI_KEEPS[case]
    img = make_image()
    expected = outcome(lambda: Affine(padding_mode="border", **kwargs)(img))
    forbid_fused_warps(monkeypatch)
    with gridsampler3d.patch_monai():
        assert_same_outcome(lambda: Affine(padding_mode="border", **kwargs)(img), expected)


def test_unserved_warp_calls_run_monai(monkeypatch):
    from monai.networks.blocks import Warp

    volume = torch.rand(1, 1, 6, 7, 8)
    ddf = smooth_field(volume.shape, 1.0, torch.float32)
    calls = [(Warp(jitter=True), volume, ddf), (Warp(), volume.double(), ddf),  # mixed dtypes: torch raises
             (Warp(), MetaTensor(volume), ddf), (Warp(), volume[:, :, :1], ddf[:, :, :1]),
             (Warp(), volume, ddf[:, :2])]  # a field of the wrong shape: MONAI's ValueError
    expected = [outcome(lambda w=w, v=v, d=d: w(v, d)) for w, v, d in calls]
    forbid_fused_warps(monkeypatch)
    with gridsampler3d.patch_monai():
        for (warp, v, d), result in zip(calls, expected):
            assert_same_outcome(lambda: warp(v, d), result)


def test_patching_and_unpatching_restore_monai():
    from monai.networks.blocks import Warp

    methods = [(Affine, "__call__"), (RandAffine, "__call__"), (RandAffined, "__call__"), (Warp, "forward")]
    originals = [cls.__dict__[name] for cls, name in methods]
    gridsampler3d.patch_monai()
    patched = [cls.__dict__[name] for cls, name in methods]  # made once: every patch installs these
    assert all(p is not o for p, o in zip(patched, originals))
    gridsampler3d.patch_monai()  # twice: still one layer, still undone by one call
    assert [cls.__dict__[name] for cls, name in methods] == patched
    gridsampler3d.patch_monai(False)
    assert [cls.__dict__[name] for cls, name in methods] == originals
    with gridsampler3d.patch_monai():
        assert [cls.__dict__[name] for cls, name in methods] == patched
        with pytest.raises(ValueError):
            with gridsampler3d.patch_monai(False):
                assert [cls.__dict__[name] for cls, name in methods] == originals
                raise ValueError("the block raises")
        assert [cls.__dict__[name] for cls, name in methods] == patched
    assert [cls.__dict__[name] for cls, name in methods] == originals


def test_unknown_monai_version_is_refused(monkeypatch):
    monkeypatch.setattr(monai, "__version__", "1.4.0")
    with pytest.raises(RuntimeError, match="MONAI 1.4.0 is not one the patch was tested with"):
        gridsampler3d.patch_monai()
    assert "gridsampler3d" not in getattr(Affine.__call__, "__doc__", "")
