// base/error: the one error type Bee throws at load time and at the API edge, plus printf-style formatting.
#pragma once
#include <stdexcept>
#include <string>

namespace bee {

// Thrown for bad input (files, flags, requests). Never thrown from inside a kernel.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// printf-style formatting into a std::string.
std::string strfmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Throws Error with a printf-style message.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace bee
