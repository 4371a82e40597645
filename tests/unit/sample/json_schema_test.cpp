// tests/unit/sample/json_schema_test: JSON Schema -> GBNF, checked by running the grammar's matcher on
// JSON texts that the schema accepts and rejects, and the errors for unsupported keywords.
#include "sample/json_schema.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "sample/grammar.h"

namespace bee {
namespace {

using Json = nlohmann::ordered_json;

bool matches(const std::string& gbnf, const std::string& text) {
    GrammarMatcher m(Grammar::parse(gbnf));
    return m.accept(text) && m.can_end();
}

bool schema_matches(const char* schema, const std::string& text) {
    return matches(json_schema_to_gbnf(Json::parse(schema)), text);
}

std::string schema_error(const char* schema) {
    try {
        json_schema_to_gbnf(Json::parse(schema));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(JsonSchema, JsonObjectGrammar) {
    const std::string g = json_object_gbnf();
    EXPECT_TRUE(matches(g, R"({"a": [1, -2.5e3, true, null, {"b": "c\n\u00e9"}], "d": {}})"));
    EXPECT_TRUE(matches(g, "{\n  \"k\": \"v\"\n}"));
    EXPECT_FALSE(matches(g, R"([1, 2])"));          // an object, not any value
    EXPECT_FALSE(matches(g, R"({"a": 01})"));       // no leading zeros
    EXPECT_FALSE(matches(g, R"({"a": 1,})"));       // no trailing comma
    EXPECT_FALSE(matches(g, "{\"a\": \"x\ny\"}"));  // raw control character in a string
}

TEST(JsonSchema, ObjectPropertiesRequiredAndOptional) {
    const char* s = R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "age"]})";
    EXPECT_TRUE(schema_matches(s, R"({"name": "Al", "age": 3})"));
    EXPECT_TRUE(schema_matches(s, R"({"name": "Al", "age": 3, "tags": ["x", "y"]})"));
    EXPECT_FALSE(schema_matches(s, R"({"name": "Al"})"));                    // age is required
    EXPECT_FALSE(schema_matches(s, R"({"name": "Al", "age": 3.5})"));        // integer
    EXPECT_FALSE(schema_matches(s, R"({"name": "Al", "age": 3, "x": 1})"));  // no other keys
    const char* all_optional = R"({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}}})";
    EXPECT_TRUE(schema_matches(all_optional, "{}"));
    EXPECT_TRUE(schema_matches(all_optional, R"({"b": null})"));
    EXPECT_TRUE(schema_matches(all_optional, R"({"a": false, "b": null})"));
    EXPECT_FALSE(schema_matches(all_optional, R"({"a": 1})"));
}

TEST(JsonSchema, ArraysStringsEnumsConstAndUnions) {
    const char* arr = R"({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3})";
    EXPECT_FALSE(schema_matches(arr, "[]"));
    EXPECT_TRUE(schema_matches(arr, "[1]"));
    EXPECT_TRUE(schema_matches(arr, "[1, 2.5, -3]"));
    EXPECT_FALSE(schema_matches(arr, "[1, 2, 3, 4]"));
    const char* str = R"({"type": "string", "minLength": 2, "maxLength": 3})";
    EXPECT_FALSE(schema_matches(str, R"("a")"));
    EXPECT_TRUE(schema_matches(str, R"("abc")"));
    EXPECT_FALSE(schema_matches(str, R"("abcd")"));
    const char* en = R"({"enum": ["red", "green", 7, null]})";
    EXPECT_TRUE(schema_matches(en, R"("green")"));
    EXPECT_TRUE(schema_matches(en, "7"));
    EXPECT_FALSE(schema_matches(en, R"("blue")"));
    EXPECT_TRUE(schema_matches(R"({"const": {"k": [1]}})", R"({"k":[1]})"));
    const char* any = R"({"anyOf": [{"type": "integer"}, {"type": "string"}], "description": "id"})";
    EXPECT_TRUE(schema_matches(any, "12"));
    EXPECT_TRUE(schema_matches(any, R"("x")"));
    EXPECT_FALSE(schema_matches(any, "true"));
    EXPECT_TRUE(schema_matches(R"({"type": ["boolean", "null"]})", "null"));
}

TEST(JsonSchema, RefsToDefsIncludingRecursion) {
    const char* s = R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
                        "$ref": "#/$defs/node"})";
    EXPECT_TRUE(schema_matches(s, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"));
    EXPECT_FALSE(schema_matches(s, R"({"v": 1, "kids": [{"w": 2}]})"));
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
    EXPECT_NE(schema_error(R"({"type": "string", "contentEncoding": "base64"})")
                  .find("unsupported keyword 'contentEncoding' at #"),
              std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "object", "properties": {"n": {"type": "number", "minimum": 0}}})")
                  .find("'minimum' on type 'number' at #/properties/n"),
              std::string::npos);
    EXPECT_NE(schema_error(R"({"$ref": "http://x/y"})").find("not a local definition"), std::string::npos);
    EXPECT_NE(schema_error(R"({"$ref": "#/$defs/missing"})").find("missing definition"), std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "blob"})").find("unknown type 'blob'"), std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})")
                  .find("not in 'properties'"),
              std::string::npos);
}

}  // namespace
}  // namespace bee
