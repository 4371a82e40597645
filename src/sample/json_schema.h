// sample/json_schema: JSON Schema (the common subset OpenAI's structured outputs use) -> GBNF, so that
// response_format / json_schema / forced tool calls become ordinary grammars for sample/grammar.
// note: nlohmann/json is header-only (a system header here); sample/ links nothing for it.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace bee {

// Supported: type (string, number, integer, boolean, null, object, array, or a list of them), properties,
// required, additionalProperties (false or absent: no other keys; true or a schema: extra keys after the
// listed ones), items, minItems, maxItems, minLength, maxLength, pattern, format (date, time, date-time,
// uuid), minimum/maximum/exclusiveMinimum/exclusiveMaximum on integers (exact), enum, const, anyOf, oneOf,
// allOf of object schemas (merged), prefixItems, items as a list (a tuple of exactly those elements, as
// llama.cpp takes it), $ref to #/$defs/… or #/definitions/…, and annotations (title, description, default, examples, $schema, $id, $comment). Any other keyword is
// an Error naming it and where it is. Output is compact-ish JSON: up to 16 whitespace characters are
// allowed between tokens, so the model cannot pad forever.
// Limits (each an Error naming it and the place): the document nests at most kJsonSchemaMaxJsonDepth
// JSON levels and schemas (with $ref hops) at most kJsonSchemaMaxDepth; the GBNF built, counted at each
// level, stays under kJsonSchemaMaxWork bytes; a definition that is only a $ref chain back to itself
// is a cycle. Array items, map values and optional properties become named rules, so the grammar
// grows linearly with the schema (nested arrays, many optional properties).
constexpr size_t kJsonSchemaMaxJsonDepth = 512;
constexpr size_t kJsonSchemaMaxDepth = 128;
constexpr size_t kJsonSchemaMaxWork = 16u << 20;

class JsonSchemaGbnf {
public:
    // `root`: the whole schema document ($refs resolve against it); throws Error if it nests too deeply.
    // `prefix` names the rules made for $defs (distinct prefixes let several schemas share one grammar).
    explicit JsonSchemaGbnf(const nlohmann::ordered_json& root, std::string prefix = "def-");

    // A GBNF expression matching the values `schema` accepts (rules it needs are collected).
    std::string expr(const nlohmann::ordered_json& schema, const std::string& path);
    // Every rule collected so far (schema $defs, and the JSON primitives `json-…` if asked), one per line.
    std::string rules(bool with_primitives = true) const;

private:
    std::string schema_expr(const nlohmann::ordered_json& s, const std::string& path);
    std::string named(const std::string& body);
    void charge(size_t n, const std::string& path);
    std::string optional_chain(const std::vector<std::string>& kvs, const std::string& path);
    std::string object_expr(const nlohmann::ordered_json& s, const std::string& path);
    std::string array_expr(const nlohmann::ordered_json& s, const std::string& path);
    std::string string_expr(const nlohmann::ordered_json& s, const std::string& path);
    std::string prefix_array_expr(const nlohmann::ordered_json& s, const std::string& path, uint64_t min, int64_t max);
    std::string integer_expr(const nlohmann::ordered_json& s, const std::string& path);
    nlohmann::ordered_json merge_all_of(const nlohmann::ordered_json& s, const std::string& path);
    std::string type_expr(const std::string& type, const nlohmann::ordered_json& s, const std::string& path);
    std::string ref_rule(const std::string& ref, const std::string& path);

    const nlohmann::ordered_json& root_;
    std::string prefix_;
    std::map<std::string, std::string> defs_;   // rule name -> its definition (refs, filled once)
    std::set<std::string> pending_;             // refs being generated (recursion)
    std::map<std::string, std::string> named_;  // helper rule body -> its name (one rule per body)
    size_t depth_ = 0;                          // expr() calls open, against kJsonSchemaMaxDepth
    size_t work_ = 0;                           // bytes built so far, against kJsonSchemaMaxWork
};

// A GBNF literal ("...") matching exactly `bytes`.
std::string gbnf_literal(const std::string& bytes);

// Integers in [lo, hi] (an absent side is open) in JSON's decimal form, exactly (json_schema_range.cpp).
// Throws Error naming `path` for an empty range or bounds beyond json-integer's 16 digits.
std::string gbnf_int_range(std::optional<int64_t> lo, std::optional<int64_t> hi, const std::string& path);

// A JSON string whose decoded text matches `pattern` (json_schema_regex.cpp): literals, escapes, classes
// [...] [^...], \d \w \s (and negations), '.', groups, '|', ? * + {m,n} (lazy forms too), ^ and $ at
// the ends; without them the match may sit anywhere in the string. Anything else is an Error naming it.
std::string gbnf_regex_string(const std::string& pattern, const std::string& path);

// Whole grammars. Both throw Error (unsupported keyword, bad $ref) with the place in the schema.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);
std::string json_object_gbnf();  // any JSON object (response_format {"type": "json_object"})

}  // namespace bee
