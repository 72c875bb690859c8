#!/usr/bin/env python3
"""MONAI's affine transforms and Warp layer: stock, under patch_torch() and under patch_monai().

- Affine: rotate (0.2, -0.1, 0.3) radians, scale 1.1, translate (2, -1, 3) voxels, border;
- RandAffine: prob 1, rotate_range 0.3, scale_range 0.1, translate_range 3 on every axis,
  border padding, one seed per variant so that each variant's i-th call draws the same matrix;
- Warp: bilinear, border, forward + backward (gradients of the image and the field) on the
  benchmark's smooth registration field (a 5^3 random field of 3 voxels, upsampled).

A (1, S, S, S) float32 MetaTensor (the Warp: (1, 1, S, S, S) tensors), S = 128 (--size), one
thread (--threads) for PyTorch and us. The three variants of a row are timed in turn within
every repeat; medians of --repeats. Prints the table and whether the targets are met.

Usage: monai_transforms.py [--size S] [--repeats R] [--threads T] [--monai PATH]
  PATH: a folder holding the monai package (default: ../shared/thirdparty/monai-1.3.0 next to
  this checkout where present, else an installed MONAI)
"""
import argparse
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))  # the package of this checkout
os.environ.setdefault("GRIDSAMPLER3D_LIBRARY", os.path.join(ROOT, "build", "libgridsampler3d.so"))
sys.path.insert(0, HERE)
import gridsampler3d  # noqa: E402
from bench import median_times  # noqa: E402
from workloads import voxel_flow  # noqa: E402

DEFAULT_MONAI = os.path.join(ROOT, "..", "shared", "thirdparty", "monai-1.3.0")
TARGETS = {"RandAffine": 10.0, "Warp forward+backward": 8.0}  # patch_monai's speed-up over stock
VARIANTS = ("stock", "patch_torch", "patch_monai")


def under(variant, call):
    """call() with the variant's patch on, restored afterwards."""
    def run():
        if variant == "stock":
            return call()
        patch = gridsampler3d.patch_torch if variant == "patch_torch" else gridsampler3d.patch_monai
        with patch():
            return call()
    return run


def rows(size):
    """{row name: {variant: a call}}."""
    from monai.data import MetaTensor
    from monai.networks.blocks import Warp
    from monai.transforms import Affine, RandAffine

    gen = torch.Generator().manual_seed(1)
    image = MetaTensor(torch.rand(1, size, size, size, generator=gen))
    affine = Affine(rotate_params=(0.2, -0.1, 0.3), scale_params=(1.1,) * 3, translate_params=(2, -1, 3),
                    padding_mode="border", image_only=True)
    random_affines = {v: RandAffine(prob=1.0, rotate_range=(0.3,) * 3, scale_range=(0.1,) * 3,
                                    translate_range=(3,) * 3, padding_mode="border").set_random_state(0)
                      for v in VARIANTS}
    volume = torch.rand(1, 1, size, size, size, generator=gen)
    ddf = voxel_flow(1, (size,) * 3, 3.0, gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Warp's note that it uses PyTorch's grid_sample
        warp = Warp(mode="bilinear", padding_mode="border")

    def train_step():
        x, d = volume.clone().requires_grad_(), ddf.clone().requires_grad_()
        warp(x, d).sum().backward()
        return x.grad, d.grad

    return {"Affine": {v: under(v, lambda: affine(image)) for v in VARIANTS},
            "RandAffine": {v: under(v, lambda t=random_affines[v]: t(image)) for v in VARIANTS},
            "Warp forward+backward": {v: under(v, train_step) for v in VARIANTS}}


def main(argv):
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--size", type=int, default=128)
    args.add_argument("--repeats", type=int, default=7)
    args.add_argument("--threads", type=int, default=1)
    args.add_argument("--monai", default=DEFAULT_MONAI)
    args = args.parse_args(argv)
    if os.path.isdir(args.monai):
        sys.path.insert(0, os.path.abspath(args.monai))
    try:
        import monai
    except ImportError:
        sys.exit(f"monai_transforms.py: MONAI is not importable and {args.monai} is not a folder holding it")
    torch.set_num_threads(args.threads)
    gridsampler3d.set_num_threads(args.threads)
    print(f"MONAI {monai.__version__} on PyTorch {torch.__version__}, {args.size}^3, one channel, float32, "
          f"{args.threads} thread(s), medians of {args.repeats}")
    print(f"{'call':22} {'stock ms':>9} {'patch_torch':>12} {'patch_monai':>12} {'speed-up':>9}  target")
    met = []
    for name, calls in rows(args.size).items():
        times = median_times([calls[v] for v in VARIANTS], args.repeats)
        stock, torch_patched, monai_patched = (t * 1e3 for t in times)
        ratio = stock / monai_patched
        target = TARGETS.get(name) if args.threads == 1 else None
        verdict = "" if target is None else f">= {target:g}x: {'met' if ratio >= target else 'NOT met'}"
        if target is not None:
            met.append(ratio >= target)
        print(f"{name:22} {stock:9.1f} {torch_patched:12.1f} {monai_patched:12.1f} {ratio:8.1f}x  {verdict}", flush=True)
    if met:
        print(f"targets met: {sum(met)} of {len(met)}")


if __name__ == "__main__":
    main(sys.argv[1:])
