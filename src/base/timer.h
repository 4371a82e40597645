// base/timer: monotonic wall-clock time in microseconds and milliseconds.
#pragma once
#include <chrono>
#include <cstdint>

namespace bee {

inline int64_t time_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
inline double time_ms() { return (double)time_us() / 1000.0; }

}  // namespace bee
