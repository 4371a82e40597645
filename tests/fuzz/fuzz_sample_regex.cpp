// tests/fuzz/fuzz_sample_regex: libFuzzer target for the `pattern` regex subset; any input is a pattern
// that must compile to a grammar the parser accepts (and follows for a few characters) or throw bee::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "sample/grammar.h"
#include "sample/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string pattern(reinterpret_cast<const char*>(data), size);
    std::string expr;
    try {
        expr = bee::gbnf_regex_string(pattern, "#");
    } catch (const bee::Error&) {
        return 0;
    }
    try {
        static const std::string prims = bee::JsonSchemaGbnf(nlohmann::ordered_json::object()).rules(true);
        bee::GrammarMatcher m(bee::Grammar::parse("root ::= " + expr + "\n" + prims));
        m.accept("\"");
        for (size_t i = 0; i < pattern.size() && i < 32; i++) m.accept(pattern.substr(i, 1));
        m.accept("\"");
        m.can_end();
    } catch (const bee::Error& e) {
        if (std::string(e.what()).find("budget") == std::string::npos) __builtin_trap();
    }
    return 0;
}
