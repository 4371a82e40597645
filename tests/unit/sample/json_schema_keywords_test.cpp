// tests/unit/sample/json_schema_keywords_test: the schema keywords with their own translators — integer
// bounds (brute force against the matcher), `pattern` (regex -> GBNF), `format`, `allOf` and
// additionalProperties with properties — and the errors for what stays unsupported.
#include <gtest/gtest.h>

#include <optional>
#include <regex>

#include "base/error.h"
#include "sample/grammar.h"
#include "sample/json_schema.h"

namespace bee {
namespace {

using Json = nlohmann::ordered_json;

bool matches(const std::shared_ptr<const Grammar>& g, const std::string& text) {
    GrammarMatcher m(g);
    return m.accept(text) && m.can_end();
}

bool schema_matches(const std::string& schema, const std::string& text) {
    return matches(Grammar::parse(json_schema_to_gbnf(Json::parse(schema))), text);
}

std::string schema_error(const std::string& schema) {
    try {
        json_schema_to_gbnf(Json::parse(schema));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// Every decimal string in -1200..1200 is accepted exactly when it lies in [lo, hi].
void expect_exact_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    const auto g = Grammar::parse("root ::= " + gbnf_int_range(lo, hi, "#") + "\n");
    for (int64_t v = -1200; v <= 1200; v++) {
        const bool in = (!lo || v >= *lo) && (!hi || v <= *hi);
        ASSERT_EQ(matches(g, std::to_string(v)), in)
            << v << " in [" << (lo ? *lo : -999999) << ", " << (hi ? *hi : 999999) << "]";
    }
    for (const char* bad : {"-0", "00", "007", "+5", "", "-", "1.0"}) EXPECT_FALSE(matches(g, bad)) << bad;
}

TEST(JsonSchemaRange, IntegerRangesAreExact) {
    expect_exact_range(0, 100);
    expect_exact_range(-1000, 1000);
    expect_exact_range(-37, -5);
    expect_exact_range(17, 983);
    expect_exact_range(-999, 0);
    expect_exact_range(5, 5);
    expect_exact_range(-105, 99);
    expect_exact_range(std::nullopt, 250);
    expect_exact_range(-250, std::nullopt);
    expect_exact_range(1, std::nullopt);
    expect_exact_range(std::nullopt, -1);
    const auto big = Grammar::parse("root ::= " + gbnf_int_range(10, std::nullopt, "#") + "\n");
    EXPECT_TRUE(matches(big, "9999999999999999"));    // 16 digits: json-integer's limit
    EXPECT_FALSE(matches(big, "10000000000000000"));  // 17
}

TEST(JsonSchemaRange, SchemaBoundsIncludingExclusiveAndFractional) {
    const std::string s = R"({"type": "integer", "exclusiveMinimum": 2, "maximum": 10.5})";
    EXPECT_FALSE(schema_matches(s, "2"));
    EXPECT_TRUE(schema_matches(s, "3"));
    EXPECT_TRUE(schema_matches(s, "10"));
    EXPECT_FALSE(schema_matches(s, "11"));
    EXPECT_TRUE(schema_matches(R"({"type": "integer", "minimum": -3, "exclusiveMaximum": 0})", "-1"));
    EXPECT_FALSE(schema_matches(R"({"type": "integer", "minimum": -3, "exclusiveMaximum": 0})", "0"));
    EXPECT_NE(schema_error(R"({"type": "integer", "minimum": 5, "maximum": 4})").find("empty"), std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "integer", "minimum": 1e17})").find("beyond 16 digits"), std::string::npos);
    EXPECT_TRUE(schema_matches(R"({"type": "integer", "maximum": 1e17})", "-12"));  // no 16-digit integer exceeds it
    EXPECT_TRUE(
        schema_matches(R"({"allOf": [{"type": "string", "format": "date"}], "title": "d"})", R"("2026-01-31")"));
    EXPECT_NE(schema_error(R"({"type": "number", "minimum": 0})").find("'minimum' on type 'number'"),
              std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "integer", "exclusiveMinimum": true})").find("boolean form"), std::string::npos);
}

std::string pattern_schema(const std::string& re) { return Json({{"type", "string"}, {"pattern", re}}).dump(); }

TEST(JsonSchemaPattern, RegexSubsetMatchesLikeStdRegex) {
    // Each pattern is checked against std::regex (ECMAScript) on the same strings: the grammar must accept
    // the JSON string exactly when the regex matches (search semantics unless anchored).
    const std::vector<std::string> patterns = {"^[A-Z][a-z]+$",
                                               "^\\d{3}-\\d{4}$",
                                               "^(cat|dog)s?$",
                                               "^a.c$",
                                               "^[^0-9]{2,3}$",
                                               "^x*y+z?$",
                                               "^(ab){2}$",
                                               "^\\w+@\\w+\\.com$",
                                               "^[a-c\\d_-]+$",
                                               "ab",
                                               "^a",
                                               "b$",
                                               "^\\s?\\S$",
                                               "^(?:x|yz)+?$",
                                               "^\"\\\\$"};
    const std::vector<std::string> texts = {"Tom",  "tom",         "TOM",         "555-1234", "55-1234", "cat",
                                            "cats", "dogs",        "cow",         "abc",      "a\nc",    "axc",
                                            "ab",   "xy",          "xx",          "yyz",      "z",       "abab",
                                            "ab1",  "me@site.com", "me@site.org", "a-b_9",    "ABC",     "xaby",
                                            "ba",   "a",           "b",           " q",       "q",       "  ",
                                            "xyzx", "x",           "Aé",          "\"\\",     "",        "0a"};
    for (const std::string& re : patterns) {
        const auto g = Grammar::parse(json_schema_to_gbnf(Json::parse(pattern_schema(re))));
        const std::regex r(re, std::regex::ECMAScript);
        for (const std::string& t : texts)
            EXPECT_EQ(matches(g, Json(t).dump()), std::regex_search(t, r))
                << "pattern " << re << " text " << Json(t).dump();
    }
}

TEST(JsonSchemaPattern, HexAndUnicodeEscapesAreCodePoints) {
    // std::regex works on bytes, so this one is checked by hand: \u00e9 is one character, written in UTF-8.
    const std::string s = pattern_schema("^\\x41\\u00e9+$");
    EXPECT_TRUE(schema_matches(s, "\"A\xc3\xa9\xc3\xa9\""));
    EXPECT_FALSE(schema_matches(s, "\"Ae\""));
}

TEST(JsonSchemaPattern, UnsupportedRegexIsNamed) {
    EXPECT_NE(schema_error(pattern_schema("^(a)\\1$")).find("the escape '\\1'"), std::string::npos);
    EXPECT_NE(schema_error(pattern_schema("^(?=a)a$")).find("lookaround"), std::string::npos);
    EXPECT_NE(schema_error(pattern_schema("^a\\bb$")).find("the escape '\\b'"), std::string::npos);
    EXPECT_NE(schema_error(pattern_schema("a^b")).find("'^' not at the start"), std::string::npos);
    EXPECT_NE(schema_error(pattern_schema("^(ab$")).find("unclosed '('"), std::string::npos);
    EXPECT_NE(schema_error(pattern_schema("^[ab$")).find("unclosed '['"), std::string::npos);
    EXPECT_NE(schema_error(pattern_schema("^a{3,1}$")).find("n < m"), std::string::npos);
    EXPECT_NE(schema_error(pattern_schema("^a**$")).find("repeated quantifier"), std::string::npos);
    EXPECT_NE(schema_error(R"({"type": "object", "properties": {"p": {"type": "string", "pattern": "\\p{L}"}}})")
                  .find("at #/properties/p"),
              std::string::npos);
}

TEST(JsonSchemaFormat, DateTimeUuidAndRefusals) {
    EXPECT_TRUE(schema_matches(R"({"type": "string", "format": "date"})", R"("2026-11-22")"));
    EXPECT_FALSE(schema_matches(R"({"type": "string", "format": "date"})", R"("2026-13-22")"));
    EXPECT_TRUE(schema_matches(R"({"type": "string", "format": "time"})", R"("17:45:09.123Z")"));
    EXPECT_FALSE(schema_matches(R"({"type": "string", "format": "time"})", R"("24:00:00Z")"));
    EXPECT_TRUE(schema_matches(R"({"type": "string", "format": "date-time"})", R"("2026-11-22T17:45:09+01:00")"));
    EXPECT_FALSE(schema_matches(R"({"type": "string", "format": "date-time"})", R"("2026-11-22 17:45:09Z")"));
    EXPECT_TRUE(schema_matches(R"({"format": "uuid"})", R"("123e4567-e89b-12d3-a456-426614174000")"));
    EXPECT_FALSE(schema_matches(R"({"format": "uuid"})", R"("123e4567e89b12d3a456426614174000")"));
    EXPECT_NE(schema_error(R"({"type": "string", "format": "email"})").find("unsupported 'format' \"email\""),
              std::string::npos);
}

TEST(JsonSchemaObjects, AllOfMergesAndAdditionalPropertiesSchema) {
    const std::string all = R"({"$defs": {"named": {"type": "object", "properties": {"name": {"type": "string"}},
                                "required": ["name"]}},
                                "allOf": [{"$ref": "#/$defs/named"},
                                          {"properties": {"age": {"type": "integer", "minimum": 0}}, "required": ["age"]}]})";
    EXPECT_TRUE(schema_matches(all, R"({"name": "Tom", "age": 3})"));
    EXPECT_FALSE(schema_matches(all, R"({"name": "Tom"})"));
    EXPECT_FALSE(schema_matches(all, R"({"name": "Tom", "age": -3})"));
    EXPECT_NE(schema_error(R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})").find("'allOf' with"),
              std::string::npos);
    const std::string ap = R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
                               "additionalProperties": {"type": "boolean"}})";
    EXPECT_TRUE(schema_matches(ap, R"({"id": 1})"));
    EXPECT_TRUE(schema_matches(ap, R"({"id": 1, "x": true, "y": false})"));
    EXPECT_FALSE(schema_matches(ap, R"({"id": 1, "x": 2})"));
    const std::string opt =
        R"({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": true})";
    EXPECT_TRUE(schema_matches(opt, R"({})"));
    EXPECT_TRUE(schema_matches(opt, R"({"z": [1], "id": 2})"));
    EXPECT_TRUE(schema_matches(opt, R"({"id": 2, "z": null})"));
    EXPECT_FALSE(schema_matches(opt, R"({, "z": null})"));
}

TEST(JsonSchemaArrays, PrefixItems) {
    const std::string tuple =
        R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false,
                                  "minItems": 1})";
    EXPECT_FALSE(schema_matches(tuple, "[]"));
    EXPECT_TRUE(schema_matches(tuple, R"(["a"])"));
    EXPECT_TRUE(schema_matches(tuple, R"(["a", 1])"));
    EXPECT_FALSE(schema_matches(tuple, R"([1, "a"])"));
    EXPECT_FALSE(schema_matches(tuple, R"(["a", 1, 2])"));
    const std::string open = R"({"prefixItems": [{"const": 0}], "items": {"type": "boolean"}, "maxItems": 3})";
    EXPECT_TRUE(schema_matches(open, "[]"));
    EXPECT_TRUE(schema_matches(open, "[0, true, false]"));
    EXPECT_FALSE(schema_matches(open, "[0, true, false, true]"));
    EXPECT_FALSE(schema_matches(open, "[0, 1]"));
    EXPECT_FALSE(schema_matches(open, "[true]"));
    EXPECT_TRUE(schema_matches(R"({"prefixItems": [{"type": "null"}]})", "[null, 1, \"x\"]"));  // no type, no items
    EXPECT_FALSE(schema_matches(R"({"prefixItems": [{"type": "null"}]})", "[1]"));
    EXPECT_NE(schema_error(R"({"prefixItems": [{}], "items": false, "minItems": 2})").find("'minItems' above"),
              std::string::npos);
}

// "items" given as a list: llama.cpp's reading of the older tuple form, exactly those elements in order.
TEST(JsonSchemaArrays, ItemsListIsATuple) {
    const std::string tuple = R"({"type": "array", "items": [{"type": "integer"}, {"type": "string"}]})";
    EXPECT_TRUE(schema_matches(tuple, R"([-3000, "a"])"));
    EXPECT_FALSE(schema_matches(tuple, "[-3000]"));
    EXPECT_FALSE(schema_matches(tuple, R"(["a", 1])"));
    EXPECT_FALSE(schema_matches(tuple, R"([1, "a", 2])"));
    EXPECT_TRUE(schema_matches(R"({"items": [{"type": "integer"}]})", "[ 7 ]"));
    EXPECT_FALSE(schema_matches(R"({"items": [{"type": "integer"}]})", "[]"));
}

}  // namespace
}  // namespace bee
