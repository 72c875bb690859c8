#!/usr/bin/python3
"""Where a kernel's time goes, by line of the project's source: `perf record` samples in
libgridsampler3d mapped through their inline chains (addr2line -i) to the innermost frame
in src/, since `perf annotate` gives most of the inlined Highway code to its intrinsic
headers. Needs a library built with -g (e.g. -DCMAKE_CXX_FLAGS=-g in a build of its own).

Usage:
  perf record -e cpu-clock -o perf.data PROGRAM ...   (PROGRAM loading that -g library)
  bench/lab/perf_lines.py perf.data [SYMBOL_PART] [--lines N]
SYMBOL_PART keeps the samples whose symbol contains it (e.g. RowPhasesBackwardBlock).
Prints each line's share of the kept samples, largest first.
"""
import argparse
import collections
import re
import subprocess


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data")
    parser.add_argument("symbol", nargs="?", default="")
    parser.add_argument("--lines", type=int, default=30)
    args = parser.parse_args()

    script = subprocess.run(["perf", "script", "-i", args.data, "--show-mmap-events", "-F", "ip,sym,dso"],
                            capture_output=True, text=True, check=True).stdout
    # The library's executable mapping: [start(size) @ file offset]: r-xp path.
    mapping = re.search(r"\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+) [^\]]*\]: r-xp (\S*libgridsampler3d\S*)", script)
    if not mapping:
        raise SystemExit("no executable mapping of libgridsampler3d in " + args.data)
    start, offset, library = int(mapping.group(1), 16), int(mapping.group(3), 16), mapping.group(4)

    samples = collections.Counter()
    for line in script.splitlines():
        fields = line.split(None, 1)
        if len(fields) < 2 or "libgridsampler3d" not in fields[1] or args.symbol not in fields[1]:
            continue
        try:
            samples[int(fields[0], 16) - start + offset] += 1
        except ValueError:
            continue
    if not samples:
        raise SystemExit("no samples in the library" + (f" for {args.symbol}" if args.symbol else ""))

    addresses = list(samples)
    frames = subprocess.run(["addr2line", "-a", "-i", "-e", library] + [hex(a) for a in addresses],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    chains, current = {}, None
    for frame in frames:
        if frame.startswith("0x"):
            current = int(frame, 16)
            chains[current] = []
        elif current is not None:
            chains[current].append(frame)
    by_line = collections.Counter()
    for address, count in samples.items():
        ours = [f for f in chains.get(address, []) if "/src/" in f]
        by_line[ours[0].split("/src/")[-1].split(" ")[0] if ours else "(outside src/)"] += count
    total = sum(samples.values())
    for where, count in by_line.most_common(args.lines):
        print(f"{100.0 * count / total:6.2f}%  {where}")
    print(f"{total} samples from {library}")


if __name__ == "__main__":
    main()
