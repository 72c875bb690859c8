#!/usr/bin/env bash
# The hardening run (docs/reliability.md): with clang,
#   1. the C++ test suite under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on),
#   2. the libFuzzer target for FUZZ_SECONDS (default 120) from the kept corpus and the seeds,
#      same sanitizers, printing the coverage it started from and ended at,
#   3. the concurrency test under ThreadSanitizer, OpenMP made visible to it by Archer.
# Builds into build-asan/ and build-tsan/; the fuzz summary goes to build-asan/fuzz-summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-120}
jobs=$(nproc)

source scripts/lib/asan-build.sh

echo "== 1. test suite under ASan + UBSan + LSan"
configure build-asan "$asan" -DGRIDSAMPLER3D_BUILD_FUZZERS=ON -DGRIDSAMPLER3D_TEST_EVERY_TARGET=OFF
cmake --build build-asan -j"$jobs" >/dev/null
# The Python tests load the library into an uninstrumented interpreter, and the install test
# builds uninstrumented consumers: both run in the normal build (scripts/test.sh).
ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "python|torch|install" | tail -n 4

echo "== 2. fuzzing for ${FUZZ_SECONDS} s from the kept corpus"
corpus=build-asan/fuzz-corpus
unpack_corpus "$corpus"
log=build-asan/fuzz.log
build-asan/fuzz/grid_sampler3d_fuzzer "$corpus" -max_total_time="$FUZZ_SECONDS" -timeout=20 \
  -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 >"$log" 2>&1 || { tail -n 60 "$log"; exit 1; }
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
read -r cov_start ft_start <<<"$(coverage_at "$log" INITED)"
read -r cov_end ft_end <<<"$(coverage_at "$log" DONE)"
{
  echo "fuzz run: ${FUZZ_SECONDS} s, ${runs} executions, 0 crashes"
  echo "coverage: ${cov_start} edges (${ft_start} features) at the start, ${cov_end} (${ft_end}) at the end"
  echo "corpus: $(tar -tJf fuzz/kept-corpus.tar.xz | grep -vc '/$') kept inputs + $(ls fuzz/corpus | wc -l) seeds; after the run: $(ls "$corpus" | wc -l) files"
} | tee build-asan/fuzz-summary.txt

echo "== 3. concurrency under TSan"
configure build-tsan "-fsanitize=thread"
cmake --build build-tsan -j"$jobs" --target concurrency_test stream_test >/dev/null
archer=$(ls /usr/lib/llvm-14/lib/libarcher.so)
export OMP_TOOL_LIBRARIES=$archer
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"
build-tsan/tests/concurrency_test | tail -n 3
build-tsan/tests/stream_test | tail -n 1
echo "sanitizers: no report"
