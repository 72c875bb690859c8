#!/usr/bin/env python3
"""The tables of docs/performance.md's "Where it stands" from a bench.py run's results.csv.

Usage: /usr/bin/python3 bench/doc_tables.py [results.csv]   (default: docs/img/results.csv)
Prints the three tables in Markdown: NCDHW C = 1 and NDHWC C = 16 with zeros padding in fp32,
then the padding and precision variants; one thread and the run's other thread count side by
side.
"""
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GRIDS = ["registration", "affine", "random", "down2x", "up2x", "noise"]


def cell(value, digits=1):
    return "-" if value in ("", None) else f"{float(value):.{digits}f}"


def ratio(value):
    return "-" if value in ("", None) else f"{float(value):.2f}x"


def main(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    counts = sorted({int(r["threads"]) for r in rows})
    every = counts[-1]
    key = lambda r: (r["grid"], r["layout"], r["dtype"], r["padding"], r["op"], int(r["threads"]))  # noqa: E731
    by = {key(r): r for r in rows}

    for layout, title in (("ncdhw", "NCDHW, C = 1, 128^3"), ("ndhwc", "NDHWC, C = 16, 64^3")):
        print(f"**{title}, zeros padding, fp32** (ms; ratios to ours)\n")
        print(f"| grid | op | 1 thread: ours | PyTorch | scalar | PyTorch/ours | scalar/ours | {every} threads: ours "
              "| PyTorch | PyTorch/ours |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for grid in GRIDS:
            for op in ("forward", "backward"):
                one = by.get((grid, layout, "fp32", "zeros", op, 1))
                many = by.get((grid, layout, "fp32", "zeros", op, every))
                if one is None:
                    continue
                tail = (f"{cell(many['ours_ms'])} | {cell(many['torch_ms'])} | {ratio(many['torch_over_ours'])}"
                        if many is not None and every != 1 else "- | - | -")
                print(f"| {grid} | {op} | {cell(one['ours_ms'])} | {cell(one['torch_ms'])} | {cell(one['scalar_ms'])} "
                      f"| {ratio(one['torch_over_ours'])} | {ratio(one['scalar_over_ours'])} | {tail} |")
        print()

    print("**Padding and precision, NCDHW C = 1, 128^3** (ms; in brackets, ours over ours in fp32 with zeros "
          "padding, timed in turn)\n")
    print(f"| grid | op | variant | 1 thread: ours | PyTorch/ours | {every} threads: ours | PyTorch/ours |")
    print("|---|---|---|---|---|---|---|")
    variants = [("fp32", "border"), ("fp32", "reflection"), ("fp64", "zeros"), ("fp16", "zeros"), ("bf16", "zeros")]
    for grid in ("registration", "affine"):
        for op in ("forward", "backward"):
            for dtype, padding in variants:
                one = by.get((grid, "ncdhw", dtype, padding, op, 1))
                many = by.get((grid, "ncdhw", dtype, padding, op, every))
                if one is None:
                    continue
                name = padding if dtype == "fp32" else dtype
                tail = (f"{cell(many['ours_ms'])} ({ratio(many['ours_over_fp32_zeros'])}) | "
                        f"{ratio(many['torch_over_ours'])}" if many is not None and every != 1 else "- | -")
                print(f"| {grid} | {op} | {name} | {cell(one['ours_ms'])} ({ratio(one['ours_over_fp32_zeros'])}) | "
                      f"{ratio(one['torch_over_ours'])} | {tail} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(HERE), "docs", "img", "results.csv"))
