"""gridsampler3d.patch_torch(): code written against torch.nn.functional alone gets PyTorch's
values from gridsampler3d under the patch; the calls PyTorch must keep still reach PyTorch;
the original comes back (as a context manager too, after an exception, from many threads)."""
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import gridsampler3d
from gridsampler3d import _patch, _runtime
from thread_runner import run_on_threads
from torch_reference import assert_matches

TORCH_GRID_SAMPLE = F.grid_sample


@pytest.fixture(autouse=True)
def unpatched():
    assert F.grid_sample is TORCH_GRID_SAMPLE, "a test left torch patched"
    yield
    gridsampler3d.patch_torch(False)


@pytest.fixture
def library_calls(monkeypatch):
    """Counts the package's calls into the C library, by operator."""
    calls = {"forward": 0, "backward": 0}
    for name in calls:
        original = getattr(_runtime, name)

        def count(*args, _original=original, _name=name):
            calls[_name] += 1
            return _original(*args)
        monkeypatch.setattr(_runtime, name, count)
    return calls


class SpatialTransformer(nn.Module):
    """VoxelMorph's layer as users write it: torch.nn.functional only, flow in voxels."""

    def __init__(self, size):
        super().__init__()
        grid = torch.stack(torch.meshgrid([torch.arange(0, s) for s in size], indexing="ij")).unsqueeze(0).float()
        self.register_buffer("grid", grid)

    def forward(self, src, flow):
        new_locs = self.grid + flow
        shape = flow.shape[2:]
        for i in range(len(shape)):
            new_locs[:, i, ...] = 2 * (new_locs[:, i, ...] / (shape[i] - 1) - 0.5)
        new_locs = new_locs.permute(0, 2, 3, 4, 1)[..., [2, 1, 0]]
        return F.grid_sample(src, new_locs, align_corners=True, mode="bilinear")


def smooth_flow(shape, voxels, seed):
    gen = torch.Generator().manual_seed(seed)
    coarse = torch.randn(shape[0], 3, 4, 4, 4, generator=gen) * voxels
    return F.interpolate(coarse, size=shape[2:], mode="trilinear", align_corners=True)


def spatial_transformer_step(seed):
    """Output and gradients of a warp loss through SpatialTransformer."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.rand(2, 2, 12, 10, 14, generator=gen, requires_grad=True)
    flow = smooth_flow(src.shape, 2.0, seed).requires_grad_()
    warped = SpatialTransformer(src.shape[2:])(src, flow)
    (warped * torch.linspace(0, 1, warped.numel()).view_as(warped)).sum().backward()
    return warped.detach(), src.grad, flow.grad


def test_spatial_transformer_gives_pytorch_values(library_calls):
    expected = spatial_transformer_step(1)
    assert library_calls == {"forward": 0, "backward": 0}
    with gridsampler3d.patch_torch():
        ours = spatial_transformer_step(1)
    assert library_calls == {"forward": 1, "backward": 1}
    for name, a, b in zip(("output", "source gradient", "flow gradient"), ours, expected):
        # The flow gradient passes through the transformer's own fp32 ops, whose rounding
        # scales ours by the same factors as PyTorch's: the fp32 bound of the reference holds.
        assert_matches(a, b, torch.float32, name)


def random_affine(batch, seed):
    gen = torch.Generator().manual_seed(seed)
    angle = (torch.rand(batch, generator=gen) - 0.5) * 0.4
    cos, sin = torch.cos(angle), torch.sin(angle)
    theta = torch.zeros(batch, 3, 4)
    theta[:, 0, 0], theta[:, 0, 1], theta[:, 1, 0], theta[:, 1, 1] = cos, -sin, sin, cos
    theta[:, 2, 2] = 1.1
    theta[:, :, 3] = (torch.rand(batch, 3, generator=gen) - 0.5) * 0.2
    return theta


def augment(image, labels, theta):
    """An augmentation library's affine transform: the image bilinear, its label map nearest."""
    grid = F.affine_grid(theta, image.shape, align_corners=False)
    warped_image = F.grid_sample(image, grid, mode="bilinear", padding_mode="border", align_corners=False)
    onehot = F.one_hot(labels, 4).permute(0, 4, 1, 2, 3).float()
    warped_labels = F.grid_sample(onehot, grid, mode="nearest", padding_mode="zeros", align_corners=False)
    return warped_image, warped_labels.argmax(1)


def test_affine_augmentation_gives_pytorch_values(library_calls):
    gen = torch.Generator().manual_seed(3)
    image = torch.rand(2, 1, 16, 18, 20, generator=gen)
    labels = torch.randint(0, 4, (2, 16, 18, 20), generator=gen)
    theta = random_affine(2, 3)
    expected_image, expected_labels = augment(image, labels, theta)
    with gridsampler3d.patch_torch():
        image_ours, labels_ours = augment(image, labels, theta)
    assert library_calls["forward"] == 2
    assert_matches(image_ours, expected_image, torch.float32, "image")
    # Nearest picks the same voxel except on an exact tie between two, which a rotated grid
    # in fp32 does not produce here; every label is checked.
    assert torch.equal(labels_ours, expected_labels)


class TinyRegistrationNet(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.flow = nn.Conv3d(2, 3, 3, padding=1)
        self.transformer = SpatialTransformer(size)

    def forward(self, moving, fixed):
        flow = self.flow(torch.cat([moving, fixed], 1))
        return self.transformer(moving, flow), flow


def training_step(seed):
    """One optimiser step of a registration net; returns the loss and the updated weights."""
    torch.manual_seed(seed)
    moving, fixed = torch.rand(1, 1, 10, 12, 8), torch.rand(1, 1, 10, 12, 8)
    net = TinyRegistrationNet(moving.shape[2:])
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    warped, flow = net(moving, fixed)
    loss = F.mse_loss(warped, fixed) + 0.01 * flow.square().mean()
    loss.backward()
    optimizer.step()
    return loss.detach(), [p.detach().clone() for p in net.parameters()]


def test_training_step_gives_pytorch_values(library_calls):
    expected_loss, expected_weights = training_step(5)
    with gridsampler3d.patch_torch():
        loss, weights = training_step(5)
    assert library_calls == {"forward": 1, "backward": 1}
    assert_matches(loss, expected_loss, torch.float32, "loss")
    for ours, theirs in zip(weights, expected_weights):
        assert_matches(ours, theirs, torch.float32, "weights after the step")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_other_supported_dtypes_are_routed(dtype, library_calls):
    inp, grid = torch.rand(1, 2, 3, 4, 5, dtype=dtype), torch.rand(1, 2, 2, 2, 3, dtype=dtype) * 2 - 1
    with gridsampler3d.patch_torch():
        out = F.grid_sample(inp, grid, align_corners=True)
    assert library_calls["forward"] == 1
    expected = TORCH_GRID_SAMPLE(inp.double(), grid.double(), align_corners=True)
    if dtype == torch.float64:
        assert_matches(out, expected, dtype, "output")
    else:  # PyTorch 1.13 has no fp16/bf16 CPU kernel: compared as test_autograd does, computed in fp32
        assert_matches(out, TORCH_GRID_SAMPLE(inp.float(), grid.float(), align_corners=True), dtype, "output")


def calls_pytorch_keeps():
    four_d = (torch.rand(1, 2, 5, 5), torch.rand(1, 3, 3, 2) * 2 - 1, {})
    mixed = (torch.rand(1, 1, 3, 3, 3), torch.rand(1, 2, 2, 2, 3, dtype=torch.float64), {})
    integer = (torch.ones(1, 1, 3, 3, 3, dtype=torch.int32), torch.zeros(1, 2, 2, 2, 3, dtype=torch.int32), {})
    bicubic = (torch.rand(1, 1, 5, 5), torch.rand(1, 3, 3, 2) * 2 - 1, {"mode": "bicubic"})
    unknown = (torch.rand(1, 1, 3, 3, 3), torch.rand(1, 2, 2, 2, 3), {"padding_mode": "wrap"})
    return {"4-D": four_d, "mixed dtypes": mixed, "int32": integer, "4-D bicubic": bicubic, "unknown padding": unknown}


def outcome(call):
    try:
        return "value", call()
    except Exception as error:  # the same exception type and message is the point
        return type(error).__name__, str(error)


@pytest.mark.parametrize("case", list(calls_pytorch_keeps()))
def test_calls_pytorch_keeps_reach_pytorch(case, library_calls):
    inp, grid, kwargs = calls_pytorch_keeps()[case]
    expected = outcome(lambda: TORCH_GRID_SAMPLE(inp, grid, align_corners=False, **kwargs))
    with gridsampler3d.patch_torch():
        ours = outcome(lambda: F.grid_sample(inp, grid, align_corners=False, **kwargs))
    assert library_calls["forward"] == 0
    assert ours[0] == expected[0]
    if ours[0] == "value":
        assert torch.equal(ours[1], expected[1])
    else:
        assert ours[1] == expected[1]


def test_tensor_subclasses_keep_pytorch_dispatch(library_calls):
    class Tagged(torch.Tensor):
        pass
    inp, grid = torch.rand(1, 1, 3, 3, 3).as_subclass(Tagged), torch.rand(1, 2, 2, 2, 3) * 2 - 1
    with gridsampler3d.patch_torch():
        out = F.grid_sample(inp, grid, align_corners=False)
    assert library_calls["forward"] == 0 and type(out) is Tagged


def test_create_graph_backward_is_pytorchs(library_calls):
    """A backward with create_graph=True (a gradient penalty, a second derivative) is PyTorch's
    graph: the same first-order values, and a second order that behaves as PyTorch's does."""
    def run():
        gen = torch.Generator().manual_seed(7)
        inp = torch.rand(1, 2, 4, 5, 6, generator=gen, dtype=torch.float64, requires_grad=True)
        grid = (torch.rand(1, 3, 2, 4, 3, generator=gen, dtype=torch.float64) * 2 - 1).requires_grad_()
        out = F.grid_sample(inp, grid, align_corners=False)
        first = torch.autograd.grad(out.square().sum(), (inp, grid), create_graph=True)
        return first, outcome(lambda: torch.autograd.grad(first[1].sum(), inp))
    (expected_first, expected_second) = run()
    with gridsampler3d.patch_torch():
        first, second = run()
    assert library_calls == {"forward": 1, "backward": 0}
    for ours, theirs in zip(first, expected_first):
        assert torch.equal(ours, theirs)
    assert second[0] == expected_second[0]
    assert second[0] == "value" or second[1] == expected_second[1]


def test_align_corners_none_warns_as_pytorch(library_calls):
    inp, grid = torch.rand(1, 1, 3, 3, 3), torch.rand(1, 2, 2, 2, 3) * 2 - 1
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        expected = TORCH_GRID_SAMPLE(inp, grid)
    with gridsampler3d.patch_torch(), warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        out = F.grid_sample(inp, grid)
    assert library_calls["forward"] == 1
    assert [(w.category, str(w.message)) for w in ours] == [(w.category, str(w.message)) for w in theirs]
    assert len(ours) == 1
    assert_matches(out, expected, torch.float32, "align_corners=None")


def test_patch_and_unpatch():
    gridsampler3d.patch_torch()
    assert F.grid_sample is _patch.grid_sample
    gridsampler3d.patch_torch()  # twice: still one layer, PyTorch's underneath
    gridsampler3d.patch_torch(False)
    assert F.grid_sample is TORCH_GRID_SAMPLE


def test_context_manager_restores_after_an_exception():
    with pytest.raises(KeyError):
        with gridsampler3d.patch_torch():
            assert F.grid_sample is _patch.grid_sample
            raise KeyError("inside")
    assert F.grid_sample is TORCH_GRID_SAMPLE
    gridsampler3d.patch_torch()
    with gridsampler3d.patch_torch(False):  # a block on PyTorch's inside patched code
        assert F.grid_sample is TORCH_GRID_SAMPLE
    assert F.grid_sample is _patch.grid_sample


def test_names_bound_before_patching_keep_pytorchs(library_calls):
    from torch.nn.functional import grid_sample as bound_before
    with gridsampler3d.patch_torch():
        bound_before(torch.rand(1, 1, 3, 3, 3), torch.rand(1, 2, 2, 2, 3), align_corners=False)
    assert library_calls["forward"] == 0


def test_patch_from_many_threads_leaves_the_original():
    seen = set()
    inp, grid = torch.rand(1, 1, 4, 4, 4), torch.rand(1, 2, 2, 2, 3) * 2 - 1
    expected = TORCH_GRID_SAMPLE(inp, grid, align_corners=False)

    def worker(index):
        for step in range(200):
            if (index + step) % 3 == 0:
                with gridsampler3d.patch_torch():
                    seen.add(F.grid_sample)
            else:
                gridsampler3d.patch_torch(step % 2 == 0)
                seen.add(F.grid_sample)
            assert torch.allclose(F.grid_sample(inp, grid, align_corners=False), expected, atol=1e-6)

    run_on_threads(worker, 8)
    assert seen <= {TORCH_GRID_SAMPLE, _patch.grid_sample}  # never a wrapper of the wrapper
    gridsampler3d.patch_torch(False)
    assert F.grid_sample is TORCH_GRID_SAMPLE


def test_patch_before_any_other_use(tmp_path):
    """A fresh process that patches first: the package must still hold PyTorch's own function
    (for the calls it sends back and for create_graph), not the replacement, which would recurse."""
    script = tmp_path / "patch_first.py"
    script.write_text(
        "import torch, torch.nn.functional as F, gridsampler3d\n"
        "original = F.grid_sample\n"
        "gridsampler3d.patch_torch()\n"
        "x = torch.rand(1, 1, 3, 3, 3, dtype=torch.float64, requires_grad=True)\n"
        "g = (torch.rand(1, 2, 2, 2, 3, dtype=torch.float64) * 2 - 1).requires_grad_()\n"
        "first = torch.autograd.grad(F.grid_sample(x, g, align_corners=False).sum(), (x, g), create_graph=True)\n"
        "print(F.grid_sample(torch.rand(1, 1, 3, 3), torch.zeros(1, 1, 1, 2), align_corners=False).shape)\n"
        "gridsampler3d.patch_torch(False)\n"
        "assert F.grid_sample is original\n"
        "print('ok')\n")
    import subprocess
    import sys
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["torch.Size([1,", "1,", "1,", "1])", "ok"]


class ScriptableWarp(nn.Module):
    def forward(self, x, grid):
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def test_torchscript_compiles_patched_code_with_pytorchs_kernel(library_calls):
    inp, grid = torch.rand(1, 2, 4, 5, 6), torch.rand(1, 3, 2, 2, 3) * 2.2 - 1.1
    with gridsampler3d.patch_torch():
        scripted = torch.jit.script(ScriptableWarp())
        out = scripted(inp, grid)
    assert library_calls["forward"] == 0  # TorchScript runs PyTorch's compiled function
    assert torch.equal(out, TORCH_GRID_SAMPLE(inp, grid, padding_mode="border", align_corners=False))
