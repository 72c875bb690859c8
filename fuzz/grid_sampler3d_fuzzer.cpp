// libFuzzer target: arbitrary calls of aclnnGridSampler3D and aclnnGridSampler3DBackward, of
// their tricubic extension (gs3dGridSampler3D*, interpolationMode 2 mostly), and now and then
// of the fused warps (gs3dAffineWarp3D*, gs3dDisplacementWarp3D*: theta or flow in the grid's
// place), built from the fuzz bytes. Shapes of 0 to 3 per dim (channels now and then up to 11; ranks 4 to 6
// now and then), every dtype code
// (supported, unsupported, unknown), formats, strides (contiguous, gapped, 0, overlapping,
// reaching outside the storage), offsets, modes and paddings out of range, null tensors and
// data, masks of 0 to 3 values, workspaces too small, grids with NaN, +-inf, 1e30 and
// denormals.
//
// Every call must either succeed or return a documented status (161001, 161002, 561101) with
// a message, leaving every output byte as it was. A success must leave the storage outside
// each output view untouched and, where every value is an exact "regular" one (k / 64 for
// data, k / 128 for grids: exact in every dtype, index math exact), agree with the
// independent double reference within the tests' tolerances (the grid sampler's calls; the
// warps' values are checked by warp3d_test and test_warps.py). Storage is allocated at its
// exact size, so AddressSanitizer sees any read or write outside it.
//
// To see what a crash input calls: GS3D_FUZZ_VERBOSE=1 grid_sampler3d_fuzzer crash-<hash>.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "gridsampler3d/tricubic3d.h"
#include "gridsampler3d/warp3d.h"
#include "c_caller.h"
#include "support/op_runner.h"
#include "support/reference_grid_sampler.h"
#include "support/test_tensor.h"

namespace {

using gs3d_test::Array5;

// Reads the fuzz bytes; past the end every read is 0, so any input is a valid call.
class Bytes {
 public:
    Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
    int Pick(int count) { return Byte() % count; }
    bool Rarely() { return Pick(16) == 0; }  // about one in 16

 private:
    const uint8_t* data_;
    size_t size_, pos_ = 0;
};

// Codes as ints: 99 is no dtype or format (passed from C, see c_caller.c).
constexpr int kDtypes[] = {ACL_FLOAT, ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_DOUBLE, ACL_INT32,
                           ACL_INT8, ACL_UINT8, ACL_INT64, ACL_BOOL, ACL_COMPLEX64, 99};
constexpr int kFormats[] = {ACL_FORMAT_ND, ACL_FORMAT_NCDHW, ACL_FORMAT_NDHWC, ACL_FORMAT_NCHW, 99};
constexpr uint8_t kSentinel = 0xA5;

// Bytes per element as the library counts them (an unknown code: 1, and refused).
int64_t ElementSize(int t) {
    switch (t) {
        case ACL_FLOAT16: case ACL_BF16: return 2;
        case ACL_DOUBLE: case ACL_INT64: case ACL_COMPLEX64: return 8;
        case ACL_FLOAT: case ACL_INT32: return 4;
        default: return 1;
    }
}

bool Supported(int t) { return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16 || t == ACL_DOUBLE; }

// One tensor argument: exact-size storage, the view's geometry, the logical values.
struct FuzzTensor {
    std::vector<int64_t> dims, strides;
    int64_t offset = 0, storage_count = 0;
    int type = ACL_FLOAT;  // a supported one may be cast to aclDataType
    int format = ACL_FORMAT_ND;
    std::unique_ptr<uint8_t[]> storage;  // exactly storage_count * element bytes
    size_t storage_bytes = 0;
    bool null_data = false;
    bool regular = true;  // every value exact and index math exact: the reference applies
    aclTensor* handle = nullptr;

    ~FuzzTensor() {
        if (handle) aclDestroyTensor(handle);
    }
    int64_t Count() const {
        int64_t n = 1;
        for (int64_t d : dims) n *= d;
        return n;
    }
    // Storage element of the row-major logical index.
    int64_t StorageIndex(int64_t linear) const {
        int64_t index = offset;
        for (size_t i = dims.size(); i-- > 0;) {
            index += (linear % dims[i]) * strides[i];
            linear /= dims[i];
        }
        return index;
    }
    bool InStorage(int64_t element) const { return element >= 0 && element < storage_count; }
};

// The view of `dims` with fuzzed strides, offset and storage size (sometimes too small).
void MakeGeometry(Bytes& in, FuzzTensor* t) {
    const size_t rank = t->dims.size();
    t->strides.assign(rank, 0);
    const int kind = in.Pick(8);  // 0-3 contiguous, 4 gapped, 5 zero strides, 6 overlapping, 7 reversed
    int64_t step = kind == 4 ? 2 : 1;
    for (size_t i = rank; i-- > 0;) {
        const size_t dim = kind == 7 ? rank - 1 - i : i;
        int64_t stride = step;
        if (kind == 5 && in.Pick(2)) stride = 0;
        if (kind == 6) stride = in.Pick(2);  // 0 or 1: elements alias
        t->strides[dim] = stride;
        step *= std::max<int64_t>(t->dims[dim], 1) + (kind == 4 ? 1 : 0);
    }
    t->offset = in.Pick(4);
    int64_t extent = 0;
    bool empty = false;
    for (size_t i = 0; i < rank; ++i) {
        empty |= t->dims[i] == 0;
        extent += (t->dims[i] - 1) * t->strides[i];
    }
    t->storage_count = empty ? in.Pick(3) : t->offset + extent + 1 + in.Pick(3);
    if (in.Rarely()) t->storage_count = std::max<int64_t>(0, t->storage_count - 1 - in.Pick(3));  // too small
}

// 0 to 3 channels from the byte's low bits (as Pick(4) reads them, so that older corpus
// inputs keep their calls), and 1 time in 8 another 4 or 8 (up to 11): the paths that start
// at 4 channels (channels-last copies, vectors of channels) get inputs too.
int64_t Channels(uint8_t byte) {
    int64_t c = byte % 4;
    if ((byte >> 2) % 8 == 7) c += 4 << (byte >> 5) % 2;
    return c;
}

double RegularValue(Bytes& in, bool grid) {
    // k / 64 with |k| <= 128: at most 8 significant bits, exact in bf16 too; grids in [-2, 2).
    const int k = static_cast<int8_t>(in.Byte());
    return grid ? k / 64.0 : k / 32.0;
}

double SpecialValue(Bytes& in) {
    constexpr double kSpecial[] = {NAN, INFINITY, -INFINITY, 1e30, -1e30, 1e-40, -1e-310, 5e-324, 1.0, -1.0};
    return kSpecial[in.Pick(10)];
}

// Fills the storage: sentinel bytes, then the view's elements (outputs keep the sentinel).
void Fill(Bytes& in, FuzzTensor* t, bool is_output, bool grid) {
    const int64_t element = ElementSize(t->type);
    t->storage_bytes = static_cast<size_t>(std::max<int64_t>(t->storage_count, 0) * std::max<int64_t>(element, 1));
    t->storage.reset(new uint8_t[t->storage_bytes ? t->storage_bytes : 1]);
    std::memset(t->storage.get(), kSentinel, t->storage_bytes);
    if (is_output || element == 0) return;
    const bool specials = in.Rarely();
    for (int64_t i = 0, n = t->Count(); i < n; ++i) {
        const int64_t at = t->StorageIndex(i);
        if (!t->InStorage(at)) continue;  // aclCreateTensor will refuse this view
        uint8_t* p = t->storage.get() + at * element;
        if (!Supported(t->type)) {
            for (int64_t b = 0; b < element; ++b) p[b] = in.Byte();
            continue;
        }
        double v = RegularValue(in, grid);
        if (specials && in.Pick(4) == 0) {
            v = SpecialValue(in);
            t->regular = false;
        }
        if (t->type == ACL_FLOAT16 || t->type == ACL_BF16 || t->type == ACL_FLOAT) {
            // Specials are stored as the nearest value of the type: encode through float.
            float f = static_cast<float>(v);
            if (t->type == ACL_FLOAT) {
                std::memcpy(p, &f, 4);
            } else if (std::isfinite(v) && std::fabs(v) < 60000 && (v == 0 || std::fabs(v) > 1e-4)) {
                gs3d_test::EncodeExactElement(v, static_cast<aclDataType>(t->type), p);
            } else {
                // Bits of NaN, +-inf, a big or a tiny value of the 16-bit type.
                const bool half = t->type == ACL_FLOAT16;
                uint16_t bits = std::isnan(v) ? (half ? 0x7E00 : 0x7FC0)
                                : std::isinf(v) || std::fabs(v) >= 60000 ? (half ? 0x7C00 : 0x7F80)
                                                                         : 0x0001;
                if (std::signbit(v)) bits |= 0x8000;
                std::memcpy(p, &bits, 2);
            }
        } else {
            std::memcpy(p, &v, 8);
        }
    }
}

void CreateHandle(Bytes& in, FuzzTensor* t) {
    t->null_data = in.Rarely() && in.Pick(2);
    t->handle = FuzzCreateTensor(t->dims.data(), t->dims.size(), t->type, t->strides.data(), t->offset, t->format,
                                 &t->storage_count, 1, t->null_data ? nullptr : t->storage.get());
    if (!t->handle) {
        const char* message = aclGetRecentErrMsg();
        if (!message || !*message) {
            std::fprintf(stderr, "aclCreateTensor refused without a message\n");
            std::abort();
        }
    }
}

std::vector<int64_t> FuzzDims(Bytes& in, std::vector<int64_t> dims) {
    if (in.Rarely()) {  // another rank: 4 or 6
        if (in.Pick(2)) dims.pop_back();
        else dims.push_back(in.Pick(3));
    }
    if (in.Rarely()) dims[in.Pick(static_cast<int>(dims.size()))] = in.Pick(4);  // a mismatching size
    return dims;
}

Array5 LoadLogical(const FuzzTensor& t, bool volume, bool channel_last) {
    // Only called for rank-5 tensors of a supported type whose view lies in storage.
    const int64_t element = ElementSize(t.type);
    Array5 a;
    const auto& d = t.dims;
    if (volume && channel_last) a = Array5(d[0], d[4], d[1], d[2], d[3]);
    else a = Array5(d[0], d[1], d[2], d[3], d[4]);
    for (int64_t i = 0, n = t.Count(); i < n; ++i) {
        const double v = gs3d_test::DecodeElement(t.storage.get() + t.StorageIndex(i) * element,
                                                 static_cast<aclDataType>(t.type));
        int64_t r = i, idx[5];
        for (int k = 5; k-- > 0;) {
            idx[k] = r % d[k];
            r /= d[k];
        }
        if (volume && channel_last) a.at(idx[0], idx[4], idx[1], idx[2], idx[3]) = v;
        else a.at(idx[0], idx[1], idx[2], idx[3], idx[4]) = v;
    }
    return a;
}

void Fail(const char* what, const std::string& detail) {
    std::fprintf(stderr, "FUZZ FAILURE: %s: %s\n", what, detail.c_str());
    std::abort();
}

// After a success: the storage outside the view is untouched and, when the reference
// applies, the values agree with it.
void CheckOutput(const FuzzTensor& t, const Array5* expected, bool volume, bool channel_last, const char* name,
                 const Array5* magnitude = nullptr) {
    const int64_t element = ElementSize(t.type);
    std::vector<bool> in_view(t.storage_count, false);
    for (int64_t i = 0, n = t.Count(); i < n; ++i) in_view[t.StorageIndex(i)] = true;
    for (int64_t s = 0; s < t.storage_count; ++s)
        for (int64_t b = 0; !in_view[s] && b < element; ++b)
            if (t.storage[s * element + b] != kSentinel) Fail(name, "wrote outside its view");
    if (!expected) return;
    const std::string diff = gs3d_test::CompareArrays(LoadLogical(t, volume, channel_last), *expected,
                                                      static_cast<aclDataType>(t.type), magnitude);
    if (!diff.empty()) Fail(name, diff);
}

bool Untouched(const FuzzTensor& t) {
    for (size_t b = 0; b < t.storage_bytes; ++b)
        if (t.storage[b] != kSentinel) return false;
    return true;
}

bool DocumentedStatus(aclnnStatus s) {
    return s == ACLNN_ERR_PARAM_NULLPTR || s == ACLNN_ERR_PARAM_INVALID || s == ACLNN_ERR_INNER_CREATE_EXECUTOR;
}

// The call in words, for replaying a crash input: GS3D_FUZZ_VERBOSE=1 grid_sampler3d_fuzzer crash-...
void Describe(bool backward, int64_t interpolation, int64_t padding, bool align, const FuzzTensor* t, int count,
              const aclBoolArray* mask, const bool* mask_values, size_t mask_size) {
    std::fprintf(stderr, "%s interpolation %lld padding %lld align %d", backward ? "backward" : "forward",
                 static_cast<long long>(interpolation), static_cast<long long>(padding), align ? 1 : 0);
    if (mask) {
        std::fprintf(stderr, " mask {");
        for (size_t i = 0; i < mask_size; ++i) std::fprintf(stderr, "%s%d", i ? " " : "", mask_values[i] ? 1 : 0);
        std::fprintf(stderr, "}");
    }
    std::fprintf(stderr, "\n");
    static const char* const kNames[5] = {"input", "grid", backward ? "gradOutput" : "out", "inputGrad", "gridGrad"};
    for (int i = 0; i < count; ++i) {
        std::fprintf(stderr, "  %-10s type %d format %d dims", kNames[i], t[i].type, t[i].format);
        for (int64_t d : t[i].dims) std::fprintf(stderr, " %lld", static_cast<long long>(d));
        std::fprintf(stderr, " strides");
        for (int64_t s : t[i].strides) std::fprintf(stderr, " %lld", static_cast<long long>(s));
        std::fprintf(stderr, " offset %lld storage %lld%s%s\n", static_cast<long long>(t[i].offset),
                     static_cast<long long>(t[i].storage_count), t[i].regular ? "" : " irregular",
                     t[i].null_data ? " null data" : "");
    }
}

aclrtStream stream = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS || aclrtCreateStream(&stream) != ACL_SUCCESS)
        std::abort();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Bytes in(data, size);
    const bool backward = in.Pick(2);
    enum Warp { kNone, kAffine, kDisplacement };
    const Warp warp = in.Rarely() ? static_cast<Warp>(1 + in.Pick(2)) : kNone;
    const int type = kDtypes[in.Pick(sizeof(kDtypes) / sizeof(kDtypes[0]))];
    const int format = in.Rarely() ? kFormats[in.Pick(5)] : kFormats[in.Pick(3)];
    const bool channel_last = format == ACL_FORMAT_NDHWC;
    const int64_t interpolation = in.Rarely() ? static_cast<int64_t>(in.Pick(5)) - 1 : in.Pick(3);
    const int64_t padding = in.Rarely() ? static_cast<int64_t>(in.Pick(6)) - 1 : in.Pick(3);
    const bool align = in.Pick(2);
    const int64_t n = in.Pick(3), c = Channels(in.Byte()), d = in.Pick(4), h = in.Pick(4), w = in.Pick(4);
    const int64_t od = in.Pick(4), oh = in.Pick(4), ow = in.Pick(4);
    auto volume_dims = [&](int64_t dd, int64_t hh, int64_t ww) {
        return channel_last ? std::vector<int64_t>{n, dd, hh, ww, c} : std::vector<int64_t>{n, c, dd, hh, ww};
    };

    // Arguments: 0 input, 1 grid (theta, flow), 2 out (forward) / gradOutput (backward), 3 inputGrad,
    // 4 gridGrad (thetaGrad, flowGrad).
    const int count = backward ? 5 : 3;
    FuzzTensor t[5];
    const std::vector<int64_t> flow_dims =
        channel_last ? std::vector<int64_t>{n, od, oh, ow, 3} : std::vector<int64_t>{n, 3, od, oh, ow};
    const std::vector<int64_t> grid_shape = warp == kAffine         ? std::vector<int64_t>{n, 3, 4}
                                            : warp == kDisplacement ? flow_dims
                                                                    : std::vector<int64_t>{n, od, oh, ow, 3};
    const std::vector<int64_t> shapes[5] = {volume_dims(d, h, w), grid_shape, volume_dims(od, oh, ow),
                                            volume_dims(d, h, w), grid_shape};
    const bool is_output[5] = {false, false, !backward, true, true};
    for (int i = 0; i < count; ++i) {
        t[i].dims = FuzzDims(in, shapes[i]);
        t[i].type = in.Rarely() ? kDtypes[in.Pick(sizeof(kDtypes) / sizeof(kDtypes[0]))] : type;
        const bool grid_like = (i == 1 || i == 4) && warp != kDisplacement;  // a flow is laid out as a volume
        t[i].format = grid_like ? (in.Rarely() ? kFormats[in.Pick(5)] : ACL_FORMAT_ND)
                                : (in.Rarely() ? kFormats[in.Pick(5)] : format);
        MakeGeometry(in, &t[i]);
        Fill(in, &t[i], is_output[i], i == 1);
        CreateHandle(in, &t[i]);
    }
    aclTensor* null_tensor = nullptr;
    auto handle = [&](int i) { return in.Rarely() && in.Pick(4) == 0 ? null_tensor : t[i].handle; };

    aclBoolArray* mask = nullptr;
    bool mask_values[3] = {true, true, true};
    size_t mask_size = 2;
    if (backward && !in.Rarely()) {
        mask_size = in.Rarely() ? in.Pick(4) : 2;
        for (size_t i = 0; i < mask_size; ++i) mask_values[i] = in.Pick(4) != 0;
        mask = aclCreateBoolArray(mask_values, mask_size);
    }
    if (std::getenv("GS3D_FUZZ_VERBOSE")) Describe(backward, interpolation, padding, align, t, count, mask, mask_values, mask_size);
    // The grid sampler through the gs3d extension calls: tricubic mostly (now and then through
    // aclnn, which must refuse it), the other modes now and then. Decided last, so that the
    // bytes before it keep their meaning for the kept corpus.
    const bool extension = warp == kNone && (interpolation == 2 ? !in.Rarely() : in.Rarely());
    const bool want_input_grad = !mask || mask_values[0];
    const bool want_grid_grad = !mask || mask_values[1];

    uint64_t workspace_size = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus status;
    if (warp == kAffine && backward)
        status = gs3dAffineWarp3DBackwardGetWorkspaceSize(handle(2), handle(0), handle(1), interpolation, padding, align,
                                                          mask, handle(3), handle(4), &workspace_size, &executor);
    else if (warp == kAffine)
        status = gs3dAffineWarp3DGetWorkspaceSize(handle(0), handle(1), interpolation, padding, align, handle(2),
                                                  &workspace_size, &executor);
    else if (warp == kDisplacement && backward)
        status = gs3dDisplacementWarp3DBackwardGetWorkspaceSize(handle(2), handle(0), handle(1), interpolation, padding,
                                                                mask, handle(3), handle(4), &workspace_size, &executor);
    else if (warp == kDisplacement)
        status = gs3dDisplacementWarp3DGetWorkspaceSize(handle(0), handle(1), interpolation, padding, handle(2),
                                                        &workspace_size, &executor);
    else if (backward)
        status = (extension ? gs3dGridSampler3DBackwardGetWorkspaceSize : aclnnGridSampler3DBackwardGetWorkspaceSize)(
            handle(2), handle(0), handle(1), interpolation, padding, align, mask, handle(3), handle(4), &workspace_size,
            &executor);
    else
        status = (extension ? gs3dGridSampler3DGetWorkspaceSize : aclnnGridSampler3DGetWorkspaceSize)(
            handle(0), handle(1), interpolation, padding, align, handle(2), &workspace_size, &executor);
    if (warp == kNone && !extension && interpolation == 2 && status != ACLNN_ERR_PARAM_INVALID &&
        status != ACLNN_ERR_PARAM_NULLPTR)
        Fail("aclnn", "interpolationMode 2 (tricubic) was not refused by an aclnn call");
    const char* api = warp == kAffine ? (backward ? "affine backward" : "affine forward")
                      : warp == kDisplacement ? (backward ? "displacement backward" : "displacement forward")
                      : backward ? "backward" : "forward";
    bool launched = false;
    if (status == ACLNN_SUCCESS) {
        // A workspace of the size asked for, or now and then one byte short (refused at launch).
        const bool short_workspace = workspace_size > 0 && in.Rarely();
        const uint64_t given = short_workspace ? workspace_size - 1 : workspace_size;
        void* workspace = nullptr;
        if (given > 0 && aclrtMalloc(&workspace, given, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS)
            Fail(api, "aclrtMalloc of the workspace failed");
        using Launch = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);
        const Launch launches[4][2] = {{aclnnGridSampler3D, aclnnGridSampler3DBackward},
                                       {gs3dAffineWarp3D, gs3dAffineWarp3DBackward},
                                       {gs3dDisplacementWarp3D, gs3dDisplacementWarp3DBackward},
                                       {gs3dGridSampler3D, gs3dGridSampler3DBackward}};
        status = launches[extension ? 3 : warp][backward](workspace, given, executor, stream);
        if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) Fail(api, "the stream reported a failure");
        if (workspace) aclrtFree(workspace);
        if (short_workspace && status != ACLNN_ERR_PARAM_INVALID) Fail(api, "a short workspace was accepted");
        launched = status == ACLNN_SUCCESS;
    }
    if (!launched) {
        if (!DocumentedStatus(status)) Fail(api, "undocumented status " + std::to_string(status));
        const char* message = aclGetRecentErrMsg();
        if (!message || !*message) Fail(api, "refused without a message");
        for (int i = 0; i < count; ++i)
            if (is_output[i] && !Untouched(t[i])) Fail(api, "a refused call wrote an output");
    } else {
        // Success: every tensor was valid, so shapes are the documented ones, read in the
        // layout of the input's format.
        const bool input_channel_last = t[0].format == ACL_FORMAT_NDHWC;
        bool reference_applies = true;
        reference_applies &= warp == kNone;
        for (int i = 0; i < count; ++i) reference_applies &= is_output[i] || t[i].regular;
        const gs3d_test::RefOptions options{static_cast<int>(interpolation), static_cast<int>(padding), align};
        if (!backward) {
            std::optional<Array5> expected;
            if (reference_applies)
                expected = gs3d_test::ReferenceForward(LoadLogical(t[0], true, input_channel_last),
                                                       LoadLogical(t[1], false, false), options);
            CheckOutput(t[2], expected ? &*expected : nullptr, true, input_channel_last, "out");
        } else {
            std::optional<Array5> input_grad, grid_grad;
            gs3d_test::BackwardMagnitudes magnitudes;  // the bound of sums whose terms cancel
            if (reference_applies) {
                input_grad.emplace();
                grid_grad.emplace();
                gs3d_test::ReferenceBackward(LoadLogical(t[2], true, input_channel_last),
                                             LoadLogical(t[0], true, input_channel_last),
                                             LoadLogical(t[1], false, false), options, &*input_grad, &*grid_grad,
                                             &magnitudes);
            }
            if (want_input_grad)
                CheckOutput(t[3], input_grad ? &*input_grad : nullptr, true, input_channel_last, "inputGrad",
                            &magnitudes.input_grad);
            else if (!Untouched(t[3])) Fail(api, "inputGrad written although the mask left it out");
            if (want_grid_grad)
                CheckOutput(t[4], grid_grad ? &*grid_grad : nullptr, false, false, "gridGrad", &magnitudes.grid_grad);
            else if (!Untouched(t[4])) Fail(api, "gridGrad written although the mask left it out");
        }
    }
    if (mask) aclDestroyBoolArray(mask);
    return 0;
}
