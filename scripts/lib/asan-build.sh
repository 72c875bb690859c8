# Sourced by scripts/sanitize.sh and scripts/fuzz-grow.sh: clang 14 from Debian's packages,
# and `configure DIR FLAGS [cmake args...]`, a Debug configuration with the sanitizer flags.
# The kernels are compiled for this machine's SIMD target only (-march=native,
# HWY_COMPILE_ONLY_STATIC): the code that runs is the code that is checked, in a third of
# the build time.
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
asan="-fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link"
configure() {  # dir, sanitizer flags, extra cmake args...
  local dir=$1 flags=$2; shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_C_FLAGS="$common $flags" -DCMAKE_CXX_FLAGS="$common $flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" "$@" >/dev/null
}
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# The fuzz target's whole starting corpus in DIR: the kept corpus (fuzz/kept-corpus.tar.xz,
# what earlier runs found, minimized) and the seeds with the named regression inputs
# (fuzz/corpus).
unpack_corpus() {  # dir
  rm -rf "$1" && mkdir -p "$1"
  tar -xJf fuzz/kept-corpus.tar.xz -C "$1"
  cp fuzz/corpus/* "$1"/
}

# The coverage a fuzzer log reports at its start (INITED) and its end (DONE): "cov ft".
coverage_at() {  # log, INITED|DONE
  # libFuzzer writes "#RUNS<tab>WHERE cov: ...", WHERE padded with spaces ("DONE  ").
  sed -n "s/^#[0-9]*[[:space:]]*$2[[:space:]]*cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p" "$1" | tail -n 1
}
