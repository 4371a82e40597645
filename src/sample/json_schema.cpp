// sample/json_schema: JSON Schema -> GBNF (see json_schema.h for the supported subset).
#include "sample/json_schema.h"

#include <algorithm>
#include <cctype>
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

const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                            "$defs", "definitions"};
const std::set<std::string> kKeywords = {"type", "properties", "required", "additionalProperties", "items", "minItems",
                                         "maxItems", "minLength", "maxLength", "enum", "const", "anyOf", "oneOf", "$ref"};

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

std::string JsonSchemaGbnf::expr(const Json& s, const std::string& path) {
    if (s.is_boolean()) {
        if (!s.get<bool>()) unsupported("schema 'false' (matches nothing)", path, "remove it");
        return "json-value";
    }
    if (!s.is_object()) unsupported("a schema must be an object or a boolean", path, "fix the schema");
    for (auto& [k, v] : s.items()) {
        (void)v;
        if (!kKeywords.count(k) && !kAnnotations.count(k))
            unsupported("unsupported keyword '" + k + "'", path, "remove it or use a supported keyword (see the README)");
    }
    if (s.contains("$ref")) {
        if (!s["$ref"].is_string()) unsupported("'$ref' must be a string", path, "use \"#/$defs/Name\"");
        return ref_rule(s["$ref"].get<std::string>(), path);
    }
    if (s.contains("const")) return gbnf_literal(s["const"].dump());
    if (s.contains("enum")) {
        const Json& e = s["enum"];
        if (!e.is_array() || e.empty()) unsupported("'enum' must be a non-empty array", path, "list the allowed values");
        std::string alts;
        for (const Json& v : e) alts += (alts.empty() ? "" : " | ") + gbnf_literal(v.dump());
        return "( " + alts + " )";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
        if (!s.contains(key)) continue;
        const Json& list = s[key];
        if (!list.is_array() || list.empty()) unsupported(strfmt("'%s' must be a non-empty array", key), path, "list the schemas");
        std::string alts;
        for (size_t i = 0; i < list.size(); i++)
            alts += (alts.empty() ? "" : " | ") + expr(list[i], path + "/" + key + "/" + std::to_string(i));
        return "( " + alts + " )";
    }
    auto t = s.find("type");
    if (t == s.end()) {
        if (s.contains("properties")) return object_expr(s, path);
        if (s.contains("items")) return array_expr(s, path);
        return "json-value";
    }
    if (t->is_string()) return type_expr(t->get<std::string>(), s, path);
    if (!t->is_array() || t->empty()) unsupported("'type' must be a string or an array of strings", path, "fix the schema");
    std::string alts;
    for (const Json& x : *t) {
        if (!x.is_string()) unsupported("'type' must be a string or an array of strings", path, "fix the schema");
        alts += (alts.empty() ? "" : " | ") + type_expr(x.get<std::string>(), s, path);
    }
    return "( " + alts + " )";
}

std::string JsonSchemaGbnf::type_expr(const std::string& type, const Json& s, const std::string& path) {
    if (type == "object") return object_expr(s, path);
    if (type == "array") return array_expr(s, path);
    if (type == "string") return string_expr(s, path);
    if (type == "number") return "json-number";
    if (type == "integer") return "json-integer";
    if (type == "boolean") return "json-boolean";
    if (type == "null") return "json-null";
    unsupported("unknown type '" + type + "'", path, "use string, number, integer, boolean, null, object or array");
}

std::string JsonSchemaGbnf::object_expr(const Json& s, const std::string& path) {
    auto ap = s.find("additionalProperties");
    const bool extra = ap != s.end() && !(ap->is_boolean() && !ap->get<bool>());
    auto props = s.find("properties");
    if (props == s.end() || props->empty()) {
        if (ap != s.end() && ap->is_object()) {  // a map: string keys, values of one schema
            const std::string v = expr(*ap, path + "/additionalProperties");
            const std::string kv = "json-string json-ws \":\" json-ws " + v + " json-ws";
            return "\"{\" json-ws ( " + kv + " ( \",\" json-ws " + kv + " )* )? \"}\"";
        }
        return "json-object";
    }
    if (!props->is_object()) unsupported("'properties' must be an object", path, "fix the schema");
    if (extra)
        unsupported("'additionalProperties' other than false together with 'properties'", path,
                    "set it to false or remove it (only the listed properties are generated)");
    std::set<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
        if (!r->is_array()) unsupported("'required' must be an array of names", path, "fix the schema");
        for (const Json& n : *r) {
            if (!n.is_string() || !props->contains(n.get<std::string>()))
                unsupported("'required' names " + n.dump() + ", which is not in 'properties'", path, "add it to 'properties'");
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
    } else {  // all optional: any one may come first, then any of the later ones
        std::string alts;
        for (size_t i = 0; i < opt.size(); i++) {
            std::string a = opt[i];
            for (size_t j = i + 1; j < opt.size(); j++) a += " ( \",\" json-ws " + opt[j] + " )?";
            alts += (alts.empty() ? "" : " | ") + ("( " + a + " )");
        }
        body = "( " + alts + " )?";
    }
    return "\"{\" json-ws " + body + " \"}\"";
}

std::string JsonSchemaGbnf::array_expr(const Json& s, const std::string& path) {
    const std::string item = s.contains("items") ? expr(s["items"], path + "/items") : "json-value";
    const uint64_t min = count(s, "minItems", path, 0);
    const int64_t max = s.contains("maxItems") ? (int64_t)count(s, "maxItems", path, 0) : -1;
    if (max >= 0 && (uint64_t)max < min) unsupported("'maxItems' below 'minItems'", path, "fix the bounds");
    if (max == 0) return "\"[\" json-ws \"]\"";
    const std::string first = item + " json-ws", more = "\",\" json-ws " + item + " json-ws";
    const std::string rest = repeat(more, min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1);
    if (min == 0) return "\"[\" json-ws ( " + first + " " + rest + " )? \"]\"";
    return "\"[\" json-ws " + first + " " + rest + " \"]\"";
}

std::string JsonSchemaGbnf::string_expr(const Json& s, const std::string& path) {
    if (!s.contains("minLength") && !s.contains("maxLength")) return "json-string";
    const uint64_t min = count(s, "minLength", path, 0);
    const int64_t max = s.contains("maxLength") ? (int64_t)count(s, "maxLength", path, 0) : -1;
    if (max >= 0 && (uint64_t)max < min) unsupported("'maxLength' below 'minLength'", path, "fix the bounds");
    return "\"\\\"\" " + repeat("json-char", min, max) + " \"\\\"\"";
}

// A $ref becomes a rule of its own (so recursive schemas work); its name is derived from the path.
std::string JsonSchemaGbnf::ref_rule(const std::string& ref, const std::string& path) {
    std::string key;
    for (const char* prefix : {"#/$defs/", "#/definitions/"})
        if (ref.rfind(prefix, 0) == 0) key = ref.substr(std::string(prefix).size());
    if (key.empty() || key.find('/') != std::string::npos)
        unsupported("'$ref' \"" + ref + "\" is not a local definition", path, "use \"#/$defs/Name\" or \"#/definitions/Name\"");
    const char* section = ref[2] == '$' ? "$defs" : "definitions";
    if (!root_.contains(section) || !root_[section].contains(key))
        unsupported("'$ref' \"" + ref + "\" names a missing definition", path, "add it under " + std::string(section));
    std::string name = prefix_;
    for (char c : key) name += std::isalnum((unsigned char)c) ? c : '-';
    name += "-" + std::to_string(std::hash<std::string>{}(ref) % 10000);
    if (defs_.count(name) || pending_.count(name)) return name;
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
