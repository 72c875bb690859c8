// The value a C caller passed for an enum parameter, as an int.
#pragma once

#include <cstring>

namespace gs3d {

// A C caller may pass any int where the API takes one of CANN's enums; in C++ loading a value
// outside the enum's range is undefined (UBSan -fsanitize=enum reports it). Entry points read
// the parameter's bits instead and validate the int.
template <typename Enum>
int RawEnum(const Enum& value) {
    static_assert(sizeof(Enum) == sizeof(int), "CANN's enums are passed as int");
    int raw;
    std::memcpy(&raw, &value, sizeof raw);
    return raw;
}

}  // namespace gs3d
