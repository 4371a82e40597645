// tests/fuzz/fuzz_sample_gbnf: libFuzzer target for the GBNF parser and the grammar matcher; any input is
// a grammar that must parse (then follow a few characters) or throw bee::Error, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "sample/grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view src(reinterpret_cast<const char*>(data), size);
    try {
        bee::GrammarMatcher m(bee::Grammar::parse(src));
        // Follow the grammar's own text a little: it exercises steps, splits inside characters and ends.
        for (size_t i = 0; i < src.size() && i < 16; i++) {
            m.allows(src.substr(i, 3));
            m.accept(src.substr(i, 1));
            m.can_end();
        }
        m.accept_token(7);
    } catch (const bee::Error&) {
    }
    return 0;
}
