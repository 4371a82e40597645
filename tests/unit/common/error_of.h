// tests/unit/common/error_of: the message of the bee::Error a call throws, for tests of error texts.
#pragma once
#include <functional>
#include <string>

#include "base/error.h"

namespace bee::test {

// What fn throws as a bee::Error, or "(no error)" when it returns.
inline std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace bee::test
