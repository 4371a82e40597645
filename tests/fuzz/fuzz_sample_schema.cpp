// tests/fuzz/fuzz_sample_schema: libFuzzer target for the JSON-schema -> GBNF compiler; any JSON input is
// a schema that must compile to a grammar the parser accepts (followed for a few JSON characters) or throw
// bee::Error, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "sample/grammar.h"
#include "sample/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto schema = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
    if (schema.is_discarded()) return 0;
    std::string gbnf;
    try {
        gbnf = bee::json_schema_to_gbnf(schema);
    } catch (const bee::Error&) {
        return 0;
    }
    try {
        bee::GrammarMatcher m(bee::Grammar::parse(gbnf));
        for (const char* piece : {"{", "\"", "a", "\"", ":", " ", "1", ",", "[", "]", "}", "null"}) m.accept(piece);
        m.can_end();
    } catch (const bee::Error& e) {
        // The compiler's output is a grammar by construction: only a budget, or a schema that refers to
        // itself before any text (left recursion through anyOf), may refuse it.
        const std::string what = e.what();
        if (what.find("budget") == std::string::npos && what.find("left-recursive") == std::string::npos)
            __builtin_trap();
    }
    return 0;
}
