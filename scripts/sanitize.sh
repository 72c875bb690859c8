#!/usr/bin/env bash
# The hardening run (docs/reliability.md): with clang,
#   1. the C++ test suite under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on),
#   2. the libFuzzer target on the seed corpus for FUZZ_SECONDS (default 120), same sanitizers,
#   3. the concurrency test under ThreadSanitizer, OpenMP made visible to it by Archer.
# Builds into build-asan/ and build-tsan/; the fuzz summary goes to build-asan/fuzz-summary.txt.
# The kernels are compiled for this machine's SIMD target only (-march=native,
# HWY_COMPILE_ONLY_STATIC): the code that runs is the code that is checked, in a third of
# the build time.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-120}
jobs=$(nproc)

packages=(clang-14 libclang-rt-14-dev libomp-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debug: the build type adds nothing to these flags, so the kernels compile at -O1; at -O2
# the ASan/UBSan build alone takes several times as long.
common="-O1 -g -fno-omit-frame-pointer -march=native -DHWY_COMPILE_ONLY_STATIC=1 -Wno-pass-failed"
configure() {  # dir, sanitizer flags, extra cmake args...
  local dir=$1 flags=$2; shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_C_FLAGS="$common $flags" -DCMAKE_CXX_FLAGS="$common $flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" "$@" >/dev/null
}

echo "== 1. test suite under ASan + UBSan + LSan"
asan="-fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link"
configure build-asan "$asan" -DGRIDSAMPLER3D_BUILD_FUZZERS=ON -DGRIDSAMPLER3D_TEST_EVERY_TARGET=OFF
cmake --build build-asan -j"$jobs" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The Python tests load the library into an uninstrumented interpreter, and the install test
# builds uninstrumented consumers: both run in the normal build (scripts/test.sh).
ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "python|torch|install" | tail -n 4

echo "== 2. fuzzing for ${FUZZ_SECONDS} s"
corpus=build-asan/fuzz-corpus
rm -rf "$corpus" && mkdir -p "$corpus" && cp fuzz/corpus/* "$corpus"/
log=build-asan/fuzz.log
build-asan/fuzz/grid_sampler3d_fuzzer "$corpus" fuzz/corpus -max_total_time="$FUZZ_SECONDS" -timeout=20 \
  -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 >"$log" 2>&1 || { tail -n 60 "$log"; exit 1; }
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
{
  echo "fuzz run: ${FUZZ_SECONDS} s, ${runs} executions, 0 crashes"
  echo "seed corpus: $(ls fuzz/corpus | wc -l) files; corpus after the run: $(ls "$corpus" | wc -l) files"
  grep -E "^#[0-9]+ +DONE" "$log" || tail -n 1 "$log"
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
