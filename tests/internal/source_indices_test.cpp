// The SIMD source indices (BlockSourceIndices, common/source_indices-inl.h) against the scalar code that
// follows PyTorch's formulas (common/coordinates.h), bit for bit, on every SIMD target compiled and
// supported here: zeros, border and reflection (vector form with a fused multiply-add where
// the target has one), forward and backward clips, float and double. The values include
// grid values whose unnormalized index lies within a few ulps of a multiple of the
// reflection span (where floor(in / span) can round either way), NaN, infinities, signed
// zeros and values too large for the vector reflection.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "internal/source_indices_test.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/tests/hwy_gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/common/coordinates.h"
#include "kernels/common/source_indices-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs3d::kernels {
namespace HWY_NAMESPACE {
namespace {

template <typename S>
bool SameBits(S a, S b) {
    return std::memcmp(&a, &b, sizeof(S)) == 0;
}

// Grid values to test for an axis of `size`: random, near the reflection span's multiples,
// and special values.
template <typename S>
std::vector<S> GridValues(int64_t size, bool align) {
    std::vector<S> values;
    std::mt19937 rng(static_cast<uint32_t>(size * 2 + align));
    std::uniform_real_distribution<double> wide(-8, 8), narrow(-1.2, 1.2);
    for (int i = 0; i < 400; ++i) values.push_back(static_cast<S>(i % 2 ? wide(rng) : narrow(rng)));
    // Grid values whose index is k reflection spans from the low end, and their neighbours.
    const double span = align ? static_cast<double>(size - 1) : static_cast<double>(size);
    const double low = align ? 0.0 : -0.5;
    for (int k = -12; k <= 12; ++k) {
        const double index = low + k * span;
        const double grid = align ? (size > 1 ? index * 2 / static_cast<double>(size - 1) - 1 : 0.0)
                                  : (2 * index + 1) / static_cast<double>(size) - 1;
        S v = static_cast<S>(grid);
        for (int step = 0; step < 4; ++step) v = std::nextafter(v, -std::numeric_limits<S>::infinity());
        for (int step = 0; step < 9; ++step) {
            values.push_back(v);
            v = std::nextafter(v, std::numeric_limits<S>::infinity());
        }
    }
    const S inf = std::numeric_limits<S>::infinity();
    for (S v : {S(0), S(-0.0), S(1), S(-1), inf, -inf, std::numeric_limits<S>::quiet_NaN(), S(1e7), S(-3e7), S(1e30),
                std::numeric_limits<S>::max(), -std::numeric_limits<S>::max(), std::numeric_limits<S>::denorm_min()})
        values.push_back(v);
    return values;
}

template <typename S, Padding P>
void CheckAxis(int64_t size, bool align) {
    const std::vector<S> values = GridValues<S>(size, align);
    HWY_ALIGN S coord[kBlock], index[kBlock], derivative[kBlock], forward[kBlock], unused[kBlock];
    for (size_t first = 0; first < values.size(); first += kBlock) {
        const int count = static_cast<int>(std::min<size_t>(kBlock, values.size() - first));
        for (int i = 0; i < kBlock; ++i) coord[i] = i < count ? values[first + i] : S(0);
        SamplerOptions options;  // through the run-time dispatch the kernels call
        options.padding = P;
        options.align_corners = align;
        BlockSourceIndices<S, true>(coord, kBlock, size, options, index, derivative);
        BlockSourceIndices<S, false>(coord, kBlock, size, options, forward, unused);
        for (int i = 0; i < count; ++i) {
            S expected_derivative;
            const S expected = SourceIndexWithDerivative<S, P>(coord[i], size, align, &expected_derivative);
            const S expected_forward = SourceIndex<S, P>(coord[i], size, align);
            ASSERT_TRUE(SameBits(index[i], expected) && SameBits(derivative[i], expected_derivative) &&
                        SameBits(forward[i], expected_forward))
                << hwy::TargetName(HWY_TARGET) << " padding " << static_cast<int>(P) << " size " << size << " align "
                << align << " grid value " << coord[i] << ": backward index " << index[i] << " (scalar " << expected
                << "), derivative " << derivative[i] << " (scalar " << expected_derivative << "), forward index "
                << forward[i] << " (scalar " << expected_forward << ")";
        }
    }
}

// ReflectLanes on unnormalized indices within 64 ulps of each multiple of the span (where
// the rounded in / span can land on either side of an integer) against the scalar
// ReflectWithDerivative, first in vectors of consecutive values, then each value in a vector
// of its own (so that every value near the ends of the span is reflected by the path for
// vectors left as they are where it qualifies, and by the general path where it does not).
// Lanes that ReflectLanes leaves to the scalar code are skipped.
template <typename S>
void CheckReflectNearMultiples(int64_t twice_low, int64_t twice_high) {
    const hn::ScalableTag<S> d;
    const size_t lanes = hn::Lanes(d);
    const ReflectSpan<S> bounds(twice_low, twice_high);
    std::vector<S> values;
    for (int k = -40; k <= 40; ++k) {
        S v = static_cast<S>(k) * bounds.span + bounds.min;
        for (int step = 0; step < 64; ++step) v = std::nextafter(v, -std::numeric_limits<S>::infinity());
        for (int step = 0; step < 129; ++step, v = std::nextafter(v, std::numeric_limits<S>::infinity()))
            values.push_back(v);
    }
    values.resize((values.size() + lanes - 1) / lanes * lanes, S(0));
    HWY_ALIGN S result[HWY_MAX_BYTES / sizeof(S)], derivative[HWY_MAX_BYTES / sizeof(S)];
    HWY_ALIGN S left_to_scalar[HWY_MAX_BYTES / sizeof(S)];
    auto check = [&](hn::Vec<decltype(d)> in, const S* expected_of, size_t count) {
        hn::Vec<decltype(d)> reflect_derivative;
        hn::Mask<decltype(d)> scalar;
        hn::Store(ReflectLanes(d, in, bounds, &reflect_derivative, &scalar), d, result);
        hn::Store(reflect_derivative, d, derivative);
        hn::Store(hn::IfThenElseZero(scalar, hn::Set(d, S(1))), d, left_to_scalar);
        for (size_t i = 0; i < count; ++i) {
            if (left_to_scalar[i] != 0) continue;
            S expected_derivative;
            const S expected = ReflectWithDerivative(expected_of[i], twice_low, twice_high, &expected_derivative);
            ASSERT_TRUE(SameBits(result[i], expected) && SameBits(derivative[i], expected_derivative))
                << hwy::TargetName(HWY_TARGET) << " reflect " << expected_of[i] << " into [" << twice_low << " / 2, "
                << twice_high << " / 2]: " << result[i] << " (scalar " << expected << "), derivative " << derivative[i]
                << " (scalar " << expected_derivative << ")";
        }
    };
    for (size_t first = 0; first < values.size(); first += lanes) check(hn::LoadU(d, values.data() + first), values.data() + first, lanes);
    for (const S& value : values) check(hn::Set(d, value), &value, 1);
    // The top of the span left as it is: its own offset qualifies, the next float's does not.
    const S top = bounds.identity_top, past = std::nextafter(top, std::numeric_limits<S>::infinity());
    ASSERT_TRUE(top / bounds.span < S(1) && !(past / bounds.span < S(1))) << top << " of span " << bounds.span;
}

template <typename S>
void CheckType() {
#if HWY_NATIVE_FMA
    for (int64_t size : {2, 3, 5, 6, 7, 11, 100, 127, 1000}) {
        CheckReflectNearMultiples<S>(0, 2 * (size - 1));  // align_corners
        CheckReflectNearMultiples<S>(-1, 2 * size - 1);
    }
#endif
    for (int64_t size : {1, 2, 3, 5, 7, 64, 127, 1000})
        for (bool align : {false, true}) {
            CheckAxis<S, Padding::kZeros>(size, align);
            CheckAxis<S, Padding::kBorder>(size, align);
            CheckAxis<S, Padding::kReflection>(size, align);
        }
}

void SourceIndicesMatchScalar() {
    CheckType<float>();
    CheckType<double>();
}

}  // namespace
// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gs3d::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gs3d::kernels {
namespace {
HWY_BEFORE_TEST(SourceIndicesTest);
HWY_EXPORT_AND_TEST_P(SourceIndicesTest, SourceIndicesMatchScalar);
}  // namespace
}  // namespace gs3d::kernels
#endif
