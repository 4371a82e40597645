// gguf/gguf_override: metadata overrides in llama.cpp's --override-kv syntax (KEY=TYPE:VALUE), parsed
// and applied to an opened file before anything reads its metadata.
#pragma once
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace bee {

struct GgufOverride {
    std::string key;
    GgufValue value;  // INT64, FLOAT64, BOOL or STRING
};

// "KEY=TYPE:VALUE" with TYPE int, float, bool (true/false) or str. Throws Error saying what is wrong.
GgufOverride parse_gguf_override(const std::string& spec);
// A comma-separated list of them, as llama.cpp's --override-kv takes.
std::vector<GgufOverride> parse_gguf_overrides(const std::string& list);

// Sets each key (added if the file lacks it). A key the file stores as another kind of value (an
// integer overridden by a string, ...) is an Error naming both types.
void apply_gguf_overrides(GgufFile& f, const std::vector<GgufOverride>& overrides);

}  // namespace bee
