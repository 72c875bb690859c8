#!/usr/bin/env bash
# Grows the kept fuzz corpus (fuzz/kept-corpus.tar.xz): fuzzes for MINUTES (default 30)
# from the kept corpus and the seeds, merges what the run found back into a minimized corpus
# (libFuzzer -merge=1), prints the coverage before and after and the executions, and
# rewrites fuzz/kept-corpus.tar.xz. Commit the archive if the coverage grew.
# Usage: scripts/fuzz-grow.sh [MINUTES] [JOBS]    (JOBS: fuzzing processes, default 1)
# Builds the ASan + UBSan fuzzer into build-asan/ as scripts/sanitize.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
jobs=${2:-1}
[[ "$minutes" =~ ^[0-9]+$ && "$minutes" -gt 0 ]] || { echo "usage: $0 [MINUTES] [JOBS]" >&2; exit 2; }
[[ "$jobs" =~ ^[0-9]+$ && "$jobs" -gt 0 ]] || { echo "usage: $0 [MINUTES] [JOBS]" >&2; exit 2; }

source scripts/lib/asan-build.sh
echo "== building the fuzzer (build-asan/)"
configure build-asan "$asan" -DGRIDSAMPLER3D_BUILD_FUZZERS=ON -DGRIDSAMPLER3D_TEST_EVERY_TARGET=OFF
cmake --build build-asan -j"$(nproc)" --target grid_sampler3d_fuzzer >/dev/null
fuzzer=build-asan/fuzz/grid_sampler3d_fuzzer
options=(-timeout=20 -rss_limit_mb=2048 -max_len=4096)

work=build-asan/fuzz-grow
rm -rf "$work" && mkdir -p "$work/found"
unpack_corpus "$work/start"
"$fuzzer" "${options[@]}" -runs=0 "$work/start" >"$work/before.log" 2>&1
read -r cov_before ft_before <<<"$(coverage_at "$work/before.log" INITED)"
echo "before: ${cov_before} edges, ${ft_before} features ($(ls "$work/start" | wc -l) inputs)"

echo "== fuzzing for ${minutes} min, ${jobs} process(es); the log is $work/fuzz.log"
fork=()
[ "$jobs" -gt 1 ] && fork=(-fork="$jobs" -ignore_crashes=0)
if ! "$fuzzer" "${options[@]}" "${fork[@]}" -max_total_time=$((minutes * 60)) -print_final_stats=1 \
    -artifact_prefix="$work/" "$work/found" "$work/start" >"$work/fuzz.log" 2>&1; then
  tail -n 60 "$work/fuzz.log"
  echo "the fuzzer found a failure: the input is in $work/ (crash-*, leak-*, timeout-*); the corpus is unchanged" >&2
  exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)
[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\).*DONE.*/\1/p' "$work/fuzz.log" | tail -n 1)
# With -fork, the jobs' totals come only in the progress lines: "#N: cov: ...".
[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$work/fuzz.log" | tail -n 1)

echo "== merging into a minimized corpus"
# The seeds go first, so that the merge keeps only what they do not already cover; they stay
# in fuzz/corpus under their names and are left out of the archive.
mkdir -p "$work/merged" && cp fuzz/corpus/* "$work/merged"/
"$fuzzer" "${options[@]}" -merge=1 "$work/merged" "$work/start" "$work/found" >"$work/merge.log" 2>&1 \
  || { tail -n 30 "$work/merge.log"; exit 1; }
for seed in fuzz/corpus/*; do rm -f "$work/merged/$(basename "$seed")"; done
mkdir -p "$work/check" && cp "$work/merged"/* "$work/check"/ 2>/dev/null || true
cp fuzz/corpus/* "$work/check"/
"$fuzzer" "${options[@]}" -runs=0 "$work/check" >"$work/after.log" 2>&1
read -r cov_after ft_after <<<"$(coverage_at "$work/after.log" INITED)"

if [ "$cov_after" -lt "$cov_before" ] || { [ "$cov_after" -eq "$cov_before" ] && [ "$ft_after" -le "$ft_before" ]; }; then
  echo "after: ${cov_after} edges, ${ft_after} features: nothing gained; fuzz/kept-corpus.tar.xz unchanged"
  echo "executions: ${runs}"
  exit 0
fi
(cd "$work/merged" && find . -maxdepth 1 -type f -printf '%P\n' | sort | \
  tar --owner=0 --group=0 --mtime=@0 -cf - -T - | xz -9 >"$OLDPWD/fuzz/kept-corpus.tar.xz")
echo "executions: ${runs}"
echo "before: ${cov_before} edges, ${ft_before} features"
echo "after:  ${cov_after} edges, ${ft_after} features ($(ls "$work/merged" | wc -l) kept inputs + $(ls fuzz/corpus | wc -l) seeds)"
echo "fuzz/kept-corpus.tar.xz rewritten: commit it"
