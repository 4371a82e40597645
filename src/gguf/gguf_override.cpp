// gguf/gguf_override: --override-kv parsing and application.
#include "gguf/gguf_override.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "base/error.h"

namespace bee {

namespace {

constexpr const char* kSyntax =
    "expected KEY=TYPE:VALUE with TYPE int, float, bool or str, e.g. "
    "llama.context_length=int:8192";

// The kind of value an override may replace: integers (any width), floats, bools, strings.
enum class Kind { integer, real, boolean, string, other };

Kind kind_of(const GgufValue& v) {
    if (v.type == GgufValueType::BOOL) return Kind::boolean;
    if (v.is_integer()) return Kind::integer;
    if (v.is_float()) return Kind::real;
    if (v.type == GgufValueType::STRING) return Kind::string;
    return Kind::other;
}

}  // namespace

GgufOverride parse_gguf_override(const std::string& spec) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) fail("--override-kv '%s': %s", spec.c_str(), kSyntax);
    GgufOverride o;
    o.key = spec.substr(0, eq);
    const size_t colon = spec.find(':', eq + 1);
    if (colon == std::string::npos) fail("--override-kv '%s': no TYPE: %s", spec.c_str(), kSyntax);
    const std::string type = spec.substr(eq + 1, colon - eq - 1), text = spec.substr(colon + 1);
    char* end = nullptr;
    errno = 0;
    if (type == "int") {
        const long long x = strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end || errno)
            fail("--override-kv '%s': '%s' is not an integer", spec.c_str(), text.c_str());
        o.value = GgufValue::make_int(GgufValueType::INT64, x);
    } else if (type == "float") {
        const double x = strtod(text.c_str(), &end);
        if (text.empty() || *end || errno || !std::isfinite(x))
            fail("--override-kv '%s': '%s' is not a finite number", spec.c_str(), text.c_str());
        o.value = GgufValue::make_float(GgufValueType::FLOAT64, x);
    } else if (type == "bool") {
        if (text != "true" && text != "false")
            fail("--override-kv '%s': a bool is true or false, not '%s'", spec.c_str(), text.c_str());
        o.value = GgufValue::make_bool(text == "true");
    } else if (type == "str") {
        o.value = GgufValue::make_str(text);
    } else {
        fail("--override-kv '%s': unknown TYPE '%s': %s", spec.c_str(), type.c_str(), kSyntax);
    }
    return o;
}

std::vector<GgufOverride> parse_gguf_overrides(const std::string& list) {
    std::vector<GgufOverride> out;
    size_t start = 0;
    while (start <= list.size()) {
        size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        out.push_back(parse_gguf_override(list.substr(start, end - start)));
        start = end + 1;
    }
    return out;
}

void apply_gguf_overrides(GgufFile& f, const std::vector<GgufOverride>& overrides) {
    for (const GgufOverride& o : overrides) {
        const GgufValue* old = f.find(o.key);
        if (old && kind_of(*old) != kind_of(o.value))
            fail("%s: --override-kv %s: the file stores %s, the override gives %s", f.path().c_str(), o.key.c_str(),
                 gguf_value_type_desc(*old).c_str(), gguf_value_type_desc(o.value).c_str());
        f.set_metadata(o.key, o.value);
    }
}

}  // namespace bee
