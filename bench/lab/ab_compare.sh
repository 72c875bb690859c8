#!/usr/bin/env bash
# Compares two builds of the library on one profile_driver workload, the way the A/B figures
# in docs/performance.md are measured: ROUNDS rounds, each running both libraries once (best
# of the driver's repeats), the order reversed every other round; prints each round's times
# and the ratio B / A, then the median ratio with its range.
#
# Usage: bench/lab/ab_compare.sh LIB_A LIB_B ROUNDS THREADS DRIVER [profile_driver arguments...]
#   LIB_A, LIB_B: libgridsampler3d.so.0 files (copies of two builds, e.g. in /tmp/a and /tmp/b)
#   DRIVER: a profile_driver binary (its RUNPATH lets LD_LIBRARY_PATH choose the library)
# Example: bench/lab/ab_compare.sh /tmp/a/libgridsampler3d.so.0 /tmp/b/libgridsampler3d.so.0 10 2 \
#            build/bench/lab/profile_driver backward 128 1 fp32 5 0.05
#
# Why rounds and ratios: this 2-vCPU host's speed drifts by up to 2x within minutes, on both
# builds alike; a ratio taken within a round cancels most of it, where two separate series of
# runs compare host phases as much as code. Why the order alternates: the second call of a
# pair tends to run a little faster or slower, depending on the phase.
set -euo pipefail
if [ $# -lt 5 ]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
lib_a=$1 lib_b=$2 rounds=$3 threads=$4 driver=$5
shift 5
# The driver finds the library by its soname in LD_LIBRARY_PATH, so each file must carry that
# name and lie in a folder of its own: else the run would load some other build, silently.
for lib in "$lib_a" "$lib_b"; do
  [ -f "$lib" ] || { echo "ab_compare: no library at $lib" >&2; exit 2; }
  [ "$(basename "$lib")" = libgridsampler3d.so.0 ] ||
    { echo "ab_compare: $lib: name the copies libgridsampler3d.so.0 (the soname the driver loads)" >&2; exit 2; }
done
[ "$(cd "$(dirname "$lib_a")" && pwd -P)" != "$(cd "$(dirname "$lib_b")" && pwd -P)" ] ||
  { echo "ab_compare: both libraries are in one folder; give each its own" >&2; exit 2; }
[ -x "$driver" ] || { echo "ab_compare: no profile_driver at $driver" >&2; exit 2; }

run() { local lib=$1; shift; OMP_NUM_THREADS=$threads LD_LIBRARY_PATH=$(dirname "$lib") "$driver" "$@" 2>&1 | tail -n 1; }

ratios=()
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then first=$lib_a second=$lib_b; else first=$lib_b second=$lib_a; fi
  declare -A time=()
  for lib in "$first" "$second"; do
    out=$(run "$lib" "$@")
    t=$(sed -n 's/.*best \([0-9.]*\) ms.*/\1/p' <<<"$out")
    [ -n "$t" ] || { echo "ab_compare: driver failed: $out" >&2; exit 1; }
    time[$lib]=$t
  done
  ratio=$(awk -v a="${time[$lib_a]}" -v b="${time[$lib_b]}" 'BEGIN { printf "%.3f", b / a }')
  ratios+=("$ratio")
  echo "round $round: A ${time[$lib_a]} ms, B ${time[$lib_b]} ms, B/A $ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "median B/A %.3f (range %.3f-%.3f, %d rounds)\n", m, v[1], v[NR], NR }'
