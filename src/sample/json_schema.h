// sample/json_schema: JSON Schema (the common subset OpenAI's structured outputs use) -> GBNF, so that
// response_format / json_schema / forced tool calls become ordinary grammars for sample/grammar.
// note: nlohmann/json is header-only (a system header here); sample/ links nothing for it.
#pragma once
#include <map>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace bee {

// Supported: type (string, number, integer, boolean, null, object, array, or a list of them), properties,
// required, additionalProperties false or absent (no other keys are generated), items, minItems,
// maxItems, minLength, maxLength, enum, const, anyOf, oneOf, $ref to #/$defs/… or #/definitions/…,
// and annotations (title, description, default, examples, $schema, $id, $comment). Any other keyword is
// an Error naming it and where it is. Output is compact-ish JSON: up to 16 whitespace characters are
// allowed between tokens, so the model cannot pad forever.
class JsonSchemaGbnf {
public:
    // `root`: the whole schema document ($refs resolve against it).
    // `prefix` names the rules made for $defs (distinct prefixes let several schemas share one grammar).
    explicit JsonSchemaGbnf(const nlohmann::ordered_json& root, std::string prefix = "def-")
        : root_(root), prefix_(std::move(prefix)) {}

    // A GBNF expression matching the values `schema` accepts (rules it needs are collected).
    std::string expr(const nlohmann::ordered_json& schema, const std::string& path);
    // Every rule collected so far (schema $defs, and the JSON primitives `json-…` if asked), one per line.
    std::string rules(bool with_primitives = true) const;

private:
    std::string object_expr(const nlohmann::ordered_json& s, const std::string& path);
    std::string array_expr(const nlohmann::ordered_json& s, const std::string& path);
    std::string string_expr(const nlohmann::ordered_json& s, const std::string& path);
    std::string type_expr(const std::string& type, const nlohmann::ordered_json& s, const std::string& path);
    std::string ref_rule(const std::string& ref, const std::string& path);

    const nlohmann::ordered_json& root_;
    std::string prefix_;
    std::map<std::string, std::string> defs_;  // rule name -> its definition (refs, filled once)
    std::set<std::string> pending_;            // refs being generated (recursion)
};

// A GBNF literal ("...") matching exactly `bytes`.
std::string gbnf_literal(const std::string& bytes);

// Whole grammars. Both throw Error (unsupported keyword, bad $ref) with the place in the schema.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);
std::string json_object_gbnf();  // any JSON object (response_format {"type": "json_object"})

}  // namespace bee
