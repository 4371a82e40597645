// tests/unit/sample/json_schema_limits_test: hostile schemas and patterns (deep nesting, $ref cycles,
// exponential or quadratic expansion) give an Error naming the limit, or compile to a linear grammar.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/error.h"
#include "sample/grammar.h"
#include "sample/json_schema.h"

namespace bee {
namespace {

using Json = nlohmann::ordered_json;

std::string schema_error(const Json& schema) {
    try {
        json_schema_to_gbnf(schema);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

bool schema_matches(const Json& schema, const std::string& text) {
    GrammarMatcher m(Grammar::parse(json_schema_to_gbnf(schema)));
    return m.accept(text) && m.can_end();
}

// `levels` schemas, each wrapping the next by `wrap` (built inside out, without recursion).
Json nest(size_t levels, Json (*wrap)(Json)) {
    Json s = {{"type", "integer"}};
    for (size_t i = 0; i < levels; i++) s = wrap(std::move(s));
    return s;
}

// note: the inner value is moved in (an initializer list would copy the whole depth at each level).
Json any_of(Json s) {
    Json out = {{"anyOf", Json::array()}};
    out["anyOf"].push_back(std::move(s));
    out["anyOf"].push_back({{"type", "null"}});
    return out;
}
Json property(Json s) {
    Json out = {{"type", "object"}, {"properties", Json::object()}, {"required", {"a"}}};
    out["properties"]["a"] = std::move(s);
    return out;
}
Json items(Json s) {
    Json out = {{"type", "array"}, {"minItems", 2}};
    out["items"] = std::move(s);
    return out;
}
Json array_of(Json s) {
    Json out = Json::array();
    out.push_back(std::move(s));
    return out;
}

TEST(JsonSchemaLimits, DeepNestingIsRefusedAtALimitNotTheStack) {
    // 100,000 levels: the document's JSON depth limit (checked without recursion) stops each of them.
    for (auto wrap : {any_of, property, items}) {
        const std::string e = schema_error(nest(100000, wrap));
        EXPECT_NE(e.find("JSON nested deeper than 512 levels (the nesting limit)"), std::string::npos) << e;
    }
    Json deep_const = Json::object();
    deep_const["const"] = nest(100000, array_of);
    const std::string c = schema_error(deep_const);
    EXPECT_NE(c.find("JSON nested deeper than 512 levels"), std::string::npos) << c;
    // 200 schema levels fit the JSON limit but not the schema one, which names where it was crossed.
    const std::string a = schema_error(nest(200, any_of));
    EXPECT_NE(a.find("schemas nested deeper than 128 (the nesting limit"), std::string::npos) << a;
    EXPECT_NE(a.find("at #/anyOf/0/anyOf/0"), std::string::npos) << a;
    const std::string p = schema_error(nest(200, property));
    EXPECT_NE(p.find("schemas nested deeper than 128"), std::string::npos) << p;
    EXPECT_NE(p.find("at #/properties/a/properties/a"), std::string::npos) << p;
    // Below the limits, a deep schema still compiles to a grammar that parses and matches.
    std::string text = "1";
    for (int i = 0; i < 100; i++) text = "{\"a\": " + text + "}";
    EXPECT_TRUE(schema_matches(nest(100, property), text));
    EXPECT_TRUE(schema_matches(nest(120, any_of), "null"));
}

TEST(JsonSchemaLimits, DeepRegexGroupsAreRefused) {
    const std::string pattern = std::string(100000, '(') + "a" + std::string(100000, ')');
    const std::string e = schema_error(Json{{"type", "string"}, {"pattern", pattern}});
    EXPECT_NE(e.find("groups nested deeper than 64 (the nesting limit) at character 64"), std::string::npos)
        << e.substr(0, 200);
    // An unbounded repetition of a group that can match nothing (the fuzzer's find) is named, not left to
    // the grammar parser's left-recursion error on a generated rule.
    for (const char* p : {"(?:ab|[^c]*)+", "(a?)*", "(|a){2,}"}) {
        const std::string r = schema_error(Json{{"type", "string"}, {"pattern", p}});
        EXPECT_NE(r.find("on a group that can match the empty string"), std::string::npos) << p << ": " << r;
    }
    EXPECT_TRUE(schema_matches(Json{{"type", "string"}, {"pattern", "^(a?){0,3}(b|c*)?$"}}, "\"aacc\""));
    const std::string ok = std::string(64, '(') + "a" + std::string(64, ')');
    EXPECT_TRUE(schema_matches(Json{{"type", "string"}, {"pattern", "^" + ok + "$"}}, "\"a\""));
}

TEST(JsonSchemaLimits, RefCyclesAreNamed) {
    const Json direct = Json::parse(R"({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"})");
    EXPECT_NE(schema_error(direct).find("a '$ref' cycle (#/$defs/A -> #/$defs/A)"), std::string::npos)
        << schema_error(direct);
    const Json pair = Json::parse(R"({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"allOf": [{"$ref": "#/$defs/A"}]}},
                                      "type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}})");
    EXPECT_NE(schema_error(pair).find("a '$ref' cycle (#/$defs/A -> #/$defs/B -> #/$defs/A) at #/properties/x"),
              std::string::npos)
        << schema_error(pair);
    // Inside an allOf merge (this never terminated): the cycle is named with the allOf part.
    const Json all_of = Json::parse(R"({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
                                        "allOf": [{"$ref": "#/$defs/A"}, {"properties": {"x": {}}}]})");
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = schema_error(all_of);
    EXPECT_NE(e.find("a '$ref' cycle in 'allOf' (#/$defs/A -> #/$defs/B -> #/$defs/A) at #/allOf/0"), std::string::npos)
        << e;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
    // A recursive schema whose $ref sits behind text (a tree) is not a cycle.
    const Json tree = Json::parse(R"({"$defs": {"T": {"type": "object", "properties": {"kids": {"type": "array",
                                      "items": {"$ref": "#/$defs/T"}}}}}, "$ref": "#/$defs/T"})");
    EXPECT_TRUE(schema_matches(tree, R"({"kids": [{"kids": []}, {}]})"));
}

TEST(JsonSchemaLimits, NestedArraysWithMinItemsGrowLinearly) {
    // Each level's item is a rule, not text written out for the first and the later items (which
    // doubled the grammar per level: 2^8 copies of the innermost schema at depth 8).
    const size_t d4 = json_schema_to_gbnf(nest(4, items)).size(), d8 = json_schema_to_gbnf(nest(8, items)).size();
    EXPECT_LT(d8, 2500u);
    EXPECT_LT(d8 - d4, 4 * 200u);  // at most ~200 bytes per level
    EXPECT_TRUE(schema_matches(nest(3, items), "[[[1, 2], [3, 4]], [[5, 6], [7, 8, 9]]]"));
    EXPECT_FALSE(schema_matches(nest(3, items), "[[[1, 2], [3]], [[5, 6], [7, 8]]]"));  // minItems 2
}

TEST(JsonSchemaLimits, ManyOptionalPropertiesCompileLinearly) {
    auto optional_props = [](int n) {
        Json props = Json::object();
        for (int i = 0; i < n; i++) props["p" + std::to_string(i)] = {{"type", "integer"}};
        return Json{{"type", "object"}, {"properties", props}};
    };
    const auto t0 = std::chrono::steady_clock::now();
    const std::string g1000 = json_schema_to_gbnf(optional_props(1000));
    auto g = Grammar::parse(g1000);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
    const size_t g100 = json_schema_to_gbnf(optional_props(100)).size();
    EXPECT_LT(g1000.size(), 12 * g100);  // ~10x for 10x the properties (written out: ~100x)
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept(R"({"p3": 1, "p500": 2, "p999": 3})"));
    EXPECT_TRUE(m.can_end());
    const Json s = optional_props(1000);
    EXPECT_TRUE(schema_matches(s, "{}"));
    EXPECT_TRUE(schema_matches(s, R"({"p999": 0})"));
    EXPECT_FALSE(schema_matches(s, R"({"p5": 1, "p2": 2})"));  // schema order
    EXPECT_FALSE(schema_matches(s, R"({"p5": 1, "p5": 2})"));
}

TEST(JsonSchemaLimits, ExponentialAllOfInliningHitsTheCompileBudget) {
    // Each definition has two properties that merge (allOf) the next one: 2^40 copies written out.
    Json defs = Json::object();
    for (int i = 0; i < 40; i++) {
        const Json next = {
            {"allOf", Json::array({{{"$ref", "#/$defs/D" + std::to_string(i + 1)}}, {{"required", Json::array()}}})}};
        defs["D" + std::to_string(i)] = {{"type", "object"}, {"properties", {{"a", next}, {"b", next}}}};
    }
    defs["D40"] = {{"type", "object"}, {"properties", {{"z", {{"type", "null"}}}}}};
    const Json s = {{"$defs", defs}, {"$ref", "#/$defs/D0"}};
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = schema_error(s);
    EXPECT_NE(e.find("bytes of grammar (the compile budget)"), std::string::npos) << e;
    EXPECT_NE(e.find("use $ref for repeated parts"), std::string::npos) << e;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST(JsonSchemaLimits, RepeatedTypesDoNotRepeatTheGrammar) {
    Json s = {{"type", "integer"}};
    for (int i = 0; i < 30; i++)
        s = {{"type", Json::array({"object", "object", "object"})}, {"properties", {{"a", s}}}, {"required", {"a"}}};
    EXPECT_LT(json_schema_to_gbnf(s).size(), 5000u);
}

}  // namespace
}  // namespace bee
