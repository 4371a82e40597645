// sample/json_schema: JSON Schema -> GBNF (see json_schema.h for the supported subset).
#include "sample/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <vector>

#include "base/error.h"

namespace bee {

namespace {

using Json = nlohmann::ordered_json;

// The JSON primitives every schema grammar may use (RFC 8259 shapes; integers up to 16 digits).
constexpr const char* kPrimitives = R"(json-ws ::= [ \t\n]{0,16}
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" json-ws ( json-string json-ws ":" json-ws json-value json-ws ( "," json-ws json-string json-ws ":" json-ws json-value json-ws )* )? "}"
json-array ::= "[" json-ws ( json-value json-ws ( "," json-ws json-value json-ws )* )? "]"
json-char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-string ::= "\"" json-char* "\""
json-integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
json-number ::= json-integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
json-boolean ::= "true" | "false"
json-null ::= "null"
)";

const std::set<std::string> kAnnotations = {"title", "description", "default", "examples",   "$schema",
                                            "$id",   "$comment",    "$defs",   "definitions"};
const std::set<std::string> kKeywords = {"type",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "items",
                                         "minItems",
                                         "maxItems",
                                         "minLength",
                                         "maxLength",
                                         "enum",
                                         "const",
                                         "anyOf",
                                         "oneOf",
                                         "$ref",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum",
                                         "allOf",
                                         "prefixItems"};

// `format` values with an exact grammar (RFC 3339 date/time, RFC 4122 uuid). Others are refused rather
// than silently unconstrained, so a client never gets output it believes was checked.
const std::map<std::string, std::string> kFormats = {
    {"date", R"("\"" [0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) "\"")"},
    {"time",
     R"("\"" ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ) "\"")"},
    {"date-time",
     R"("\"" [0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) "T" ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ) "\"")"},
    {"uuid", R"("\"" [0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12} "\"")"},
};

[[noreturn]] void unsupported(const std::string& what, const std::string& path, const std::string& fix) {
    fail("json_schema: %s at %s; %s", what.c_str(), path.c_str(), fix.c_str());
}

uint64_t count(const Json& s, const char* key, const std::string& path, uint64_t dflt) {
    auto it = s.find(key);
    if (it == s.end()) return dflt;
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
        unsupported(strfmt("'%s' must be a non-negative integer", key), path, "fix the schema");
    const uint64_t v = it->get<uint64_t>();
    if (v > 1000) unsupported(strfmt("'%s' above 1000", key), path, "drop the bound or lower it");
    return v;
}

// Walks a JSON value without recursion: its nodes (counting stops past `cap`); throws Error naming
// `path` if it nests deeper than kJsonSchemaMaxJsonDepth (nlohmann's dump, copy and compare recurse).
size_t json_nodes(const Json& j, const std::string& path, size_t cap) {
    std::vector<std::pair<const Json*, size_t>> todo = {{&j, 1}};
    size_t n = 0;
    while (!todo.empty() && n <= cap) {
        auto [v, depth] = todo.back();
        todo.pop_back();
        n++;
        if (depth > kJsonSchemaMaxJsonDepth)
            unsupported(strfmt("JSON nested deeper than %zu levels (the nesting limit)", kJsonSchemaMaxJsonDepth), path,
                        "flatten the schema");
        if (v->is_structured())
            for (const Json& c : *v) todo.push_back({&c, depth + 1});
    }
    return n;
}

// A `$ref` to a local definition: its section ("$defs" or "definitions") and key; both empty if not local.
std::pair<std::string, std::string> local_ref(const std::string& ref) {
    for (const char* section : {"$defs", "definitions"}) {
        const std::string prefix = std::string("#/") + section + "/";
        if (ref.rfind(prefix, 0) == 0 && ref.size() > prefix.size() &&
            ref.find('/', prefix.size()) == std::string::npos)
            return {section, ref.substr(prefix.size())};
    }
    return {"", ""};
}

// A schema that is only a `$ref` (annotations aside): the reference, else "".
// A single-part allOf with annotations is its part, so it counts as a reference too.
std::string only_ref(const Json& s) {
    if (!s.is_object()) return "";
    for (auto& [k, v] : s.items()) {
        (void)v;
        if (k != "$ref" && k != "allOf" && !kAnnotations.count(k)) return "";
    }
    if (s.contains("$ref") == s.contains("allOf")) return "";
    if (s.contains("allOf")) return s["allOf"].is_array() && s["allOf"].size() == 1 ? only_ref(s["allOf"][0]) : "";
    return s["$ref"].is_string() ? s["$ref"].get<std::string>() : "";
}

// item{min,max} in GBNF; max < 0: unbounded.
std::string repeat(const std::string& item, uint64_t min, int64_t max) {
    if (max < 0) return strfmt("( %s ){%llu,}", item.c_str(), (unsigned long long)min);
    return strfmt("( %s ){%llu,%lld}", item.c_str(), (unsigned long long)min, (long long)max);
}

}  // namespace

std::string gbnf_literal(const std::string& bytes) {
    std::string out = "\"";
    for (unsigned char c : bytes) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += (char)c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20) {
            out += strfmt("\\x%02x", c);
        } else {
            out += (char)c;
        }
    }
    return out + "\"";
}

JsonSchemaGbnf::JsonSchemaGbnf(const Json& root, std::string prefix) : root_(root), prefix_(std::move(prefix)) {
    json_nodes(root_, "#", SIZE_MAX);
}

// Counts n bytes of GBNF built against kJsonSchemaMaxWork (the compile budget: time and memory follow it).
void JsonSchemaGbnf::charge(size_t n, const std::string& path) {
    work_ += n;
    if (work_ > kJsonSchemaMaxWork)
        unsupported(strfmt("the schema compiles to more than %zu bytes of grammar (the compile budget)",
                           kJsonSchemaMaxWork),
                    path, "use $ref for repeated parts, fewer properties or alternatives, and smaller bounds");
}

// A rule named for `body` (one per distinct body), so a part used twice is written once.
std::string JsonSchemaGbnf::named(const std::string& body) {
    if (body.find_first_of(" \"[(") == std::string::npos) return body;  // already a rule name
    auto it = named_.find(body);
    if (it != named_.end()) return it->second;
    const std::string name = prefix_ + "h_" + std::to_string(named_.size());  // '_': never from a $defs key
    named_[body] = name;
    defs_[name] = body;
    return name;
}

std::string JsonSchemaGbnf::expr(const Json& s, const std::string& path) {
    if (depth_ >= kJsonSchemaMaxDepth)
        unsupported(strfmt("schemas nested deeper than %zu (the nesting limit, $ref hops included)",
                           kJsonSchemaMaxDepth),
                    path, "flatten the schema");
    depth_++;
    std::string out = schema_expr(s, path);
    depth_--;
    charge(out.size(), path);
    return out;
}

std::string JsonSchemaGbnf::schema_expr(const Json& s, const std::string& path) {
    if (s.is_boolean()) {
        if (!s.get<bool>()) unsupported("schema 'false' (matches nothing)", path, "remove it");
        return "json-value";
    }
    if (!s.is_object()) unsupported("a schema must be an object or a boolean", path, "fix the schema");
    for (auto& [k, v] : s.items()) {
        (void)v;
        if (!kKeywords.count(k) && !kAnnotations.count(k))
            unsupported("unsupported keyword '" + k + "'", path,
                        "remove it or use a supported keyword (see the README)");
    }
    if (s.contains("allOf")) return expr(merge_all_of(s, path), path);
    if (s.contains("$ref")) {
        if (!s["$ref"].is_string()) unsupported("'$ref' must be a string", path, "use \"#/$defs/Name\"");
        return ref_rule(s["$ref"].get<std::string>(), path);
    }
    if (s.contains("const")) return gbnf_literal(s["const"].dump());
    if (s.contains("enum")) {
        const Json& e = s["enum"];
        if (!e.is_array() || e.empty())
            unsupported("'enum' must be a non-empty array", path, "list the allowed values");
        std::string alts;
        for (const Json& v : e) alts += (alts.empty() ? "" : " | ") + gbnf_literal(v.dump());
        return "( " + alts + " )";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
        if (!s.contains(key)) continue;
        const Json& list = s[key];
        if (!list.is_array() || list.empty())
            unsupported(strfmt("'%s' must be a non-empty array", key), path, "list the schemas");
        std::string alts;
        for (size_t i = 0; i < list.size(); i++)
            alts += (alts.empty() ? "" : " | ") + expr(list[i], path + "/" + key + "/" + std::to_string(i));
        return "( " + alts + " )";
    }
    auto t = s.find("type");
    if (t == s.end()) {
        if (s.contains("properties")) return object_expr(s, path);
        if (s.contains("items") || s.contains("prefixItems")) return array_expr(s, path);
        if (s.contains("pattern") || s.contains("format")) return string_expr(s, path);
        for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
            if (s.contains(k)) unsupported(strfmt("'%s' without a type", k), path, "add \"type\": \"integer\"");
        return "json-value";
    }
    if (t->is_string()) return type_expr(t->get<std::string>(), s, path);
    if (!t->is_array() || t->empty())
        unsupported("'type' must be a string or an array of strings", path, "fix the schema");
    std::string alts;
    std::set<std::string> seen;
    for (const Json& x : *t) {
        if (!x.is_string()) unsupported("'type' must be a string or an array of strings", path, "fix the schema");
        if (!seen.insert(x.get<std::string>()).second) continue;  // a repeated type would repeat its grammar
        alts += (alts.empty() ? "" : " | ") + type_expr(x.get<std::string>(), s, path);
    }
    return "( " + alts + " )";
}

std::string JsonSchemaGbnf::type_expr(const std::string& type, const Json& s, const std::string& path) {
    if (type == "object") return object_expr(s, path);
    if (type == "array") return array_expr(s, path);
    if (type == "string") return string_expr(s, path);
    if (type == "number") {
        for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
            if (s.contains(k))
                unsupported(strfmt("'%s' on type 'number'", k), path,
                            "use type 'integer' (its bounds are enforced exactly) or drop the bound");
        return "json-number";
    }
    if (type == "integer") return integer_expr(s, path);
    if (type == "boolean") return "json-boolean";
    if (type == "null") return "json-null";
    unsupported("unknown type '" + type + "'", path, "use string, number, integer, boolean, null, object or array");
}

// Integer bounds (numbers, possibly fractional; exclusive ones as numbers, JSON Schema draft 6+).
std::string JsonSchemaGbnf::integer_expr(const Json& s, const std::string& path) {
    std::optional<int64_t> lo, hi;
    auto bound = [&](const char* key) -> std::optional<double> {
        auto it = s.find(key);
        if (it == s.end()) return std::nullopt;
        if (!it->is_number())
            unsupported(strfmt("'%s' must be a number (draft 4's boolean form is not supported)", key), path,
                        "fix the schema");
        const double v = it->get<double>();
        if (!(std::fabs(v) < 1e18)) unsupported(strfmt("'%s' is beyond 1e18", key), path, "use a smaller bound");
        return v;  // gbnf_int_range drops bounds beyond json-integer's 16 digits, or refuses an empty range
    };
    auto tighten_lo = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
    auto tighten_hi = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
    if (auto v = bound("minimum")) tighten_lo((int64_t)std::ceil(*v));
    if (auto v = bound("exclusiveMinimum")) tighten_lo((int64_t)std::floor(*v) + 1);
    if (auto v = bound("maximum")) tighten_hi((int64_t)std::floor(*v));
    if (auto v = bound("exclusiveMaximum")) tighten_hi((int64_t)std::ceil(*v) - 1);
    if (!lo && !hi) return "json-integer";
    return gbnf_int_range(lo, hi, path);
}

// allOf: object schemas merged into one (properties united, required united); a single-element allOf
// is its element. Anything else (e.g. two string schemas) is refused: intersecting grammars is not done.
Json JsonSchemaGbnf::merge_all_of(const Json& s, const std::string& path) {
    const Json& list = s["allOf"];
    if (!list.is_array() || list.empty()) unsupported("'allOf' must be a non-empty array", path, "list the schemas");
    Json rest = s;
    rest.erase("allOf");
    const bool only_annotations = std::all_of(rest.items().begin(), rest.items().end(),
                                              [](const auto& kv) { return kAnnotations.count(kv.key()) > 0; });
    if (list.size() == 1 && only_annotations) return list[0];
    Json merged = Json::object();
    auto add = [&](Json part, const std::string& where) {
        std::vector<std::string> seen;  // the $refs followed, to name a cycle
        while (part.is_object() && part.contains("$ref") && part["$ref"].is_string()) {  // merge what it names
            const std::string ref = part["$ref"].get<std::string>();
            const auto [section, key] = local_ref(ref);
            if (section.empty() || !root_.contains(section) || !root_[section].contains(key))
                unsupported("'$ref' \"" + ref + "\" in 'allOf' is not a local definition", where,
                            "use \"#/$defs/Name\"");
            seen.push_back(ref);
            if (std::count(seen.begin(), seen.end(), ref) > 1) {
                std::string cycle;
                for (const std::string& r : seen) cycle += (cycle.empty() ? "" : " -> ") + r;
                unsupported("a '$ref' cycle in 'allOf' (" + cycle + ")", where,
                            "break the cycle: a definition cannot be only itself");
            }
            charge(json_nodes(root_[section][key], where, kJsonSchemaMaxWork), where);  // the copy below
            part = root_[section][key];
        }
        if (!part.is_object()) unsupported("'allOf' parts must be object schemas", where, "merge them by hand");
        for (auto& [k, v] : part.items()) {
            if (k == "properties") {
                if (!v.is_object()) unsupported("'properties' must be an object", where, "fix the schema");
                for (auto& [name, sub] : v.items()) {
                    if (merged["properties"].contains(name) && merged["properties"][name] != sub)
                        unsupported("'allOf' parts give property '" + name + "' different schemas", where,
                                    "give it one schema");
                    merged["properties"][name] = sub;
                }
            } else if (k == "required") {
                if (!v.is_array()) unsupported("'required' must be an array of names", where, "fix the schema");
                for (const Json& n : v)
                    if (!merged.contains("required") ||
                        std::find(merged["required"].begin(), merged["required"].end(), n) == merged["required"].end())
                        merged["required"].push_back(n);
            } else if (k == "type" && v == "object") {
                merged["type"] = "object";
            } else if (k == "additionalProperties" && v.is_boolean() && !v.get<bool>()) {
                merged[k] = v;
            } else if (!kAnnotations.count(k)) {
                unsupported("'allOf' with '" + k + "' (only object schemas with properties/required merge)", where,
                            "merge the schemas by hand");
            }
        }
    };
    add(rest, path);
    for (size_t i = 0; i < list.size(); i++) add(list[i], path + "/allOf/" + std::to_string(i));
    return merged;
}

std::string JsonSchemaGbnf::object_expr(const Json& s, const std::string& path) {
    auto ap = s.find("additionalProperties");
    const bool extra = ap != s.end() && !(ap->is_boolean() && !ap->get<bool>());
    auto props = s.find("properties");
    if (props == s.end() || props->empty()) {
        if (ap != s.end() && ap->is_object()) {  // a map: string keys, values of one schema
            const std::string v = named(expr(*ap, path + "/additionalProperties"));
            const std::string kv = named("json-string json-ws \":\" json-ws " + v + " json-ws");
            return "\"{\" json-ws ( " + kv + " ( \",\" json-ws " + kv + " )* )? \"}\"";
        }
        return "json-object";
    }
    if (!props->is_object()) unsupported("'properties' must be an object", path, "fix the schema");
    // Extra keys (additionalProperties true or a schema) come after the listed ones. note: the grammar
    // does not stop an extra key from repeating a listed name.
    std::string more;
    if (extra) {
        const std::string v = ap->is_object() ? named(expr(*ap, path + "/additionalProperties")) : "json-value";
        more = "\",\" json-ws json-string json-ws \":\" json-ws " + v + " json-ws";
    }
    std::set<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
        if (!r->is_array()) unsupported("'required' must be an array of names", path, "fix the schema");
        for (const Json& n : *r) {
            if (!n.is_string() || !props->contains(n.get<std::string>()))
                unsupported("'required' names " + n.dump() + ", which is not in 'properties'", path,
                            "add it to 'properties'");
            required.insert(n.get<std::string>());
        }
    }
    // Required properties first (schema order), then the optional ones, each optional one may be left out.
    std::vector<std::string> req, opt;
    for (auto& [name, sub] : props->items()) {
        const std::string kv = gbnf_literal(Json(name).dump()) + " json-ws \":\" json-ws " +
                               expr(sub, path + "/properties/" + name) + " json-ws";
        (required.count(name) ? req : opt).push_back(kv);
    }
    std::string body;
    if (!req.empty()) {
        for (size_t i = 0; i < req.size(); i++) body += (i ? " \",\" json-ws " : "") + req[i];
        for (const std::string& kv : opt) body += " ( \",\" json-ws " + kv + " )?";
        if (extra) body += " ( " + more + " )*";
    } else {  // all optional: any one may come first, then any of the later ones
        std::string alts = optional_chain(opt, path);
        if (extra) {  // the first extra key has no comma before it when no listed one came first
            alts =
                "( " + alts + " ) ( " + more + " )* | " + more.substr(more.find("json-string")) + " ( " + more + " )*";
        }
        body = "( " + alts + " )?";
    }
    return "\"{\" json-ws " + body + " \"}\"";
}

// Optional properties with none required, in order, each may be left out: F_i ::= K_i T_i+1 | F_i+1 (the
// first present one is i or a later one), T_j ::= ( "," K_j )? T_j+1 (any of the later ones). Rules make
// it linear in the number of properties (written out, it is quadratic). Returns F_0.
std::string JsonSchemaGbnf::optional_chain(const std::vector<std::string>& kvs, const std::string& path) {
    std::string first, tail;  // F_i+1 and T_i+1 while building from the last property back
    for (size_t i = kvs.size(); i-- > 0;) {
        const std::string k = named(kvs[i]);
        first = named(k + (tail.empty() ? "" : " " + tail) + (first.empty() ? "" : " | " + first));
        if (i > 0) tail = named("( \",\" json-ws " + k + " )?" + (tail.empty() ? "" : " " + tail));
        charge(k.size() * 2 + tail.size() + first.size(), path);
    }
    return first;
}

std::string JsonSchemaGbnf::array_expr(const Json& s, const std::string& path) {
    const uint64_t min = count(s, "minItems", path, 0);
    int64_t max = s.contains("maxItems") ? (int64_t)count(s, "maxItems", path, 0) : -1;
    if (max >= 0 && (uint64_t)max < min) unsupported("'maxItems' below 'minItems'", path, "fix the bounds");
    if (s.contains("prefixItems")) return prefix_array_expr(s, path, min, max);
    if (s.contains("items") && s["items"].is_array()) {
        // the older tuple form ("items": [A, B]), taken as llama.cpp takes it: exactly those elements
        Json tuple = s;
        tuple["prefixItems"] = s["items"];
        tuple["items"] = false;
        tuple["minItems"] = std::max<uint64_t>(min, s["items"].size());
        return prefix_array_expr(tuple, path, tuple["minItems"].get<uint64_t>(), max);
    }
    // note: the item is a rule, not text written twice (first and later items), which would double the
    // grammar at each level of nested arrays.
    const std::string item = named(s.contains("items") ? expr(s["items"], path + "/items") : "json-value");
    if (max == 0) return "\"[\" json-ws \"]\"";
    const std::string first = item + " json-ws", more = "\",\" json-ws " + item + " json-ws";
    const std::string rest = repeat(more, min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1);
    if (min == 0) return "\"[\" json-ws ( " + first + " " + rest + " )? \"]\"";
    return "\"[\" json-ws " + first + " " + rest + " \"]\"";
}

// prefixItems: element i follows prefixItems[i]; later ones follow `items` (false: none). The array may
// stop after any element from minItems on, as JSON Schema allows a shorter array.
std::string JsonSchemaGbnf::prefix_array_expr(const Json& s, const std::string& path, uint64_t min, int64_t max) {
    const Json& pre = s["prefixItems"];
    if (!pre.is_array() || pre.empty())
        unsupported("'prefixItems' must be a non-empty array", path, "list the schemas");
    const bool no_extra = s.contains("items") && s["items"].is_boolean() && !s["items"].get<bool>();
    size_t n = pre.size();
    if (no_extra) max = max < 0 ? (int64_t)n : std::min<int64_t>(max, (int64_t)n);
    if (max >= 0 && (uint64_t)max < n) n = (size_t)max;  // later prefix schemas can never be used
    if (max >= 0 && (uint64_t)max < min)
        unsupported("'minItems' above what 'prefixItems' and 'items' allow", path, "fix the bounds");
    std::string tail;  // the elements after the prefix
    if (max < 0 || (uint64_t)max > n) {
        const std::string item = named(s.contains("items") ? expr(s["items"], path + "/items") : "json-value");
        tail = repeat("\",\" json-ws " + item + " json-ws", min > n ? min - n : 0, max < 0 ? -1 : max - (int64_t)n);
    }
    for (size_t i = n; i-- > 0;) {  // built from the last prefix element back to the first
        const std::string elem = expr(pre[i], path + "/prefixItems/" + std::to_string(i)) + " json-ws";
        std::string seq = (i == 0 ? "" : "\",\" json-ws ") + elem + (tail.empty() ? "" : " " + tail);
        tail = i >= min ? named("( " + seq + " )?") : seq;  // a rule: no group nesting per element
    }
    if (n == 0) tail = "";
    return "\"[\" json-ws " + tail + " \"]\"";
}

std::string JsonSchemaGbnf::string_expr(const Json& s, const std::string& path) {
    const bool length = s.contains("minLength") || s.contains("maxLength");
    if (int(length) + int(s.contains("pattern")) + int(s.contains("format")) > 1)
        unsupported("more than one of 'pattern', 'format' and minLength/maxLength", path, "keep one of them");
    if (auto p = s.find("pattern"); p != s.end()) {
        if (!p->is_string()) unsupported("'pattern' must be a string", path, "fix the schema");
        return gbnf_regex_string(p->get<std::string>(), path);
    }
    if (auto f = s.find("format"); f != s.end()) {
        auto it = f->is_string() ? kFormats.find(f->get<std::string>()) : kFormats.end();
        if (it == kFormats.end())
            unsupported("unsupported 'format' " + f->dump(), path, "use date, time, date-time or uuid, or a 'pattern'");
        return it->second;
    }
    if (!length) return "json-string";
    const uint64_t min = count(s, "minLength", path, 0);
    const int64_t max = s.contains("maxLength") ? (int64_t)count(s, "maxLength", path, 0) : -1;
    if (max >= 0 && (uint64_t)max < min) unsupported("'maxLength' below 'minLength'", path, "fix the bounds");
    return "\"\\\"\" " + repeat("json-char", min, max) + " \"\\\"\"";
}

// A $ref becomes a rule of its own (so recursive schemas work); its name is derived from the path.
std::string JsonSchemaGbnf::ref_rule(const std::string& ref, const std::string& path) {
    const auto [section, key] = local_ref(ref);
    if (section.empty())
        unsupported("'$ref' \"" + ref + "\" is not a local definition", path,
                    "use \"#/$defs/Name\" or \"#/definitions/Name\"");
    if (!root_.contains(section) || !root_[section].contains(key))
        unsupported("'$ref' \"" + ref + "\" names a missing definition", path, "add it under " + section);
    std::string name = prefix_;
    for (char c : key) name += std::isalnum((unsigned char)c) ? c : '-';
    name += "-" + std::to_string(std::hash<std::string>{}(ref) % 10000);
    if (defs_.count(name) || pending_.count(name)) return name;
    // A definition that is only a reference, through a chain back to itself, matches nothing: name the cycle.
    // note: a longer chain fails the nesting limit first, so this walk stays short.
    std::vector<std::string> chain = {ref};
    for (std::string next = only_ref(root_[section][key]); !next.empty() && chain.size() <= kJsonSchemaMaxDepth;) {
        chain.push_back(next);
        if (std::count(chain.begin(), chain.end(), next) > 1) {
            std::string cycle;
            for (const std::string& r : chain) cycle += (cycle.empty() ? "" : " -> ") + r;
            unsupported("a '$ref' cycle (" + cycle + ")", path, "break the cycle: a definition cannot be only itself");
        }
        const auto [sec, k] = local_ref(next);
        if (sec.empty() || !root_.contains(sec) || !root_[sec].contains(k)) break;  // reported when reached
        next = only_ref(root_[sec][k]);
    }
    pending_.insert(name);
    const std::string body = expr(root_[section][key], ref.substr(1));
    pending_.erase(name);
    defs_[name] = body;
    return name;
}

std::string JsonSchemaGbnf::rules(bool with_primitives) const {
    std::string out = with_primitives ? kPrimitives : "";
    for (auto& [name, body] : defs_) out += name + " ::= " + body + "\n";
    return out;
}

std::string json_schema_to_gbnf(const Json& schema) {
    JsonSchemaGbnf g(schema);
    const std::string root = g.expr(schema, "#");
    return "root ::= " + root + " json-ws\n" + g.rules();
}

std::string json_object_gbnf() { return "root ::= json-object json-ws\n" + std::string(kPrimitives); }

}  // namespace bee
