// Division of 32-bit unsigned values by a fixed divisor with one 64x64->128 multiply
// (Lemire, Kaser, Kurz: "Faster remainder by direct computation", 2019): exact for every
// 32-bit dividend and divisor. The hot loops decode point indices with it instead of `/`.
#pragma once

#include <cstdint>

namespace gs3d::kernels {

class FastDivider32 {
 public:
    explicit FastDivider32(uint32_t divisor)
        : divisor_(divisor), magic_(divisor > 1 ? UINT64_MAX / divisor + 1 : 0) {}

    uint32_t Divide(uint32_t n) const {
        if (divisor_ == 1) return n;
        return static_cast<uint32_t>((static_cast<unsigned __int128>(magic_) * n) >> 64);
    }

 private:
    uint32_t divisor_;
    uint64_t magic_;
};

}  // namespace gs3d::kernels
