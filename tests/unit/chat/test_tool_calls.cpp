// Tool-call parsing: format detection on real templates, each format's call shapes (single, parallel,
// text around them), malformed calls staying content, and streaming (content released early, the same
// result however the text is split).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/tool_calls.h"

using namespace bee::chat;
namespace fs = std::filesystem;

namespace {

std::string read_template(const char* name) {
    std::ifstream f(fs::path(BEE_SOURCE_DIR) / "tests" / "data" / "chat_templates" / name);
    EXPECT_TRUE(f.good()) << name;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Feeds `text` in pieces of `step` bytes and merges every delta.
ToolCallDelta parse_in_pieces(ToolCallFormat f, const std::string& text, size_t step) {
    ToolCallParser p(f);
    ToolCallDelta all;
    auto merge = [&](ToolCallDelta d) {
        all.content += d.content;
        for (ToolCall& c : d.calls) all.calls.push_back(std::move(c));
    };
    for (size_t i = 0; i < text.size(); i += step) merge(p.feed(text.substr(i, step)));
    merge(p.finish());
    return all;
}

// Parses whole and in 1/3/7-byte pieces; all four must agree. Returns the whole-text result.
ToolCallDelta parse_all_ways(ToolCallFormat f, const std::string& text) {
    ToolCallDelta whole = parse_tool_calls(f, text);
    for (size_t step : {1, 3, 7}) {
        ToolCallDelta d = parse_in_pieces(f, text, step);
        EXPECT_EQ(d.content, whole.content) << "step " << step << ": " << text;
        EXPECT_EQ(d.calls.size(), whole.calls.size()) << "step " << step << ": " << text;
        for (size_t i = 0; i < std::min(d.calls.size(), whole.calls.size()); i++) {
            EXPECT_EQ(d.calls[i].name, whole.calls[i].name);
            EXPECT_EQ(d.calls[i].arguments, whole.calls[i].arguments);
        }
    }
    return whole;
}

}  // namespace

TEST(ToolCalls, DetectsFormatFromRealTemplates) {
    const std::pair<const char*, ToolCallFormat> cases[] = {
        {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::hermes},
        {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::hermes},
        {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::hermes},
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::llama3},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::llama3},
        {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::llama3},
        {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::mistral},
        {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::mistral},
        {"unsloth-mistral-Devstral-Small-2507.jinja", ToolCallFormat::mistral},
        {"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", ToolCallFormat::generic},
        {"google-gemma-3-it.jinja", ToolCallFormat::generic},
    };
    for (const auto& [file, want] : cases)
        EXPECT_EQ(detect_tool_call_format(read_template(file)), want)
            << file << ": got " << tool_call_format_name(detect_tool_call_format(read_template(file)));
}

TEST(ToolCalls, HermesSingleAndParallel) {
    ToolCallDelta d =
        parse_all_ways(ToolCallFormat::hermes,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.calls[0].name, "get_weather");
    EXPECT_EQ(d.calls[0].arguments, "{\"city\":\"Paris\"}");
    EXPECT_EQ(d.content, "");

    d = parse_all_ways(ToolCallFormat::hermes,
                       "Let me check both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
                       "<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>\n");
    ASSERT_EQ(d.calls.size(), 2u);
    EXPECT_EQ(d.calls[0].name, "a");
    EXPECT_EQ(d.calls[0].arguments, "{\"x\":1}");
    EXPECT_EQ(d.calls[1].name, "b");
    EXPECT_EQ(d.calls[1].arguments, "{}");
    EXPECT_EQ(d.content, "Let me check both.");  // the blank before the call is dropped
}

TEST(ToolCalls, HermesMalformedStaysContent) {
    const std::string bad = "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": }\n</tool_call>";
    ToolCallDelta d = parse_all_ways(ToolCallFormat::hermes, bad);
    EXPECT_TRUE(d.calls.empty());
    EXPECT_EQ(d.content, bad);
    // No name, an array where arguments belong, trailing junk inside the tags: all content.
    for (const std::string& s : {std::string("<tool_call>{\"arguments\": {}}</tool_call>"),
                                 std::string("<tool_call>{\"name\": \"a\", \"arguments\": [1]}</tool_call>"),
                                 std::string("<tool_call>{\"name\": \"a\"} extra</tool_call>")}) {
        d = parse_all_ways(ToolCallFormat::hermes, s);
        EXPECT_TRUE(d.calls.empty()) << s;
        EXPECT_EQ(d.content, s);
    }
    // A good call next to a bad one: the good one is a call, the bad one stays text.
    d = parse_all_ways(ToolCallFormat::hermes,
                       "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{oops</tool_call>");
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.content, "<tool_call>{oops</tool_call>");
}

TEST(ToolCalls, HermesUnclosedAtEnd) {
    // Cut by the token limit before the close tag: a complete JSON call is still a call ...
    ToolCallDelta d =
        parse_all_ways(ToolCallFormat::hermes, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}}\n");
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.calls[0].arguments, "{\"q\":\"x\"}");
    // ... an incomplete one is content.
    d = parse_all_ways(ToolCallFormat::hermes, "<tool_call>\n{\"name\": \"a\", \"argu");
    EXPECT_TRUE(d.calls.empty());
    EXPECT_EQ(d.content, "<tool_call>\n{\"name\": \"a\", \"argu");
}

TEST(ToolCalls, StreamingReleasesTextEarlyAndCallsOnClose) {
    ToolCallParser p(ToolCallFormat::hermes);
    EXPECT_EQ(p.feed("Hello there").content, "Hello there");
    EXPECT_EQ(p.feed(", one <tool").content, ", one");  // "<tool" may open a call; the blank may precede one
    ToolCallDelta d = p.feed("_call>{\"name\": \"f\", \"arguments\": {\"a\": \"<tool_call>\"}}");
    EXPECT_EQ(d.content, "");  // the blank before a call is dropped
    EXPECT_TRUE(d.calls.empty());
    d = p.feed("</tool_call>");  // emitted as soon as it closes, before the end of generation
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.calls[0].arguments, "{\"a\":\"<tool_call>\"}");
    d = p.feed(" and <b>bold</b>");
    EXPECT_EQ(d.content, " and <b>bold</b>");  // "<b" cannot grow into "<tool_call>"
    d = p.finish();
    EXPECT_EQ(d.content, "");
    EXPECT_TRUE(d.calls.empty());
}

TEST(ToolCalls, Llama3Json) {
    ToolCallDelta d = parse_all_ways(ToolCallFormat::llama3,
                                     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"days\": 3}}");
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.calls[0].name, "get_weather");
    EXPECT_EQ(d.calls[0].arguments, "{\"city\":\"Oslo\",\"days\":3}");
    EXPECT_EQ(d.content, "");

    d = parse_all_ways(
        ToolCallFormat::llama3,
        "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {\"k\": [1, 2]}}");
    ASSERT_EQ(d.calls.size(), 2u);
    EXPECT_EQ(d.calls[1].name, "b");
    EXPECT_EQ(d.calls[1].arguments, "{\"k\":[1,2]}");

    d = parse_all_ways(ToolCallFormat::llama3, "Sure.<|python_tag|>{\"name\": \"a\", \"parameters\": {\"s\": \"}{\"}}");
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.calls[0].arguments, "{\"s\":\"}{\"}");
    EXPECT_EQ(d.content, "Sure.");
}

TEST(ToolCalls, Llama3PlainTextAndMalformed) {
    ToolCallParser p(ToolCallFormat::llama3);
    EXPECT_EQ(p.feed("The answer is {42}.").content, "The answer is {42}.");  // not at the start: text
    EXPECT_EQ(p.finish().content, "");
    for (const std::string& s : {std::string("{\"name\": \"a\", \"parameters\": {\"x\": 1}"),  // unbalanced
                                 std::string("{\"answer\": 42}"),                              // JSON, not a call
                                 std::string("{\"name\": \"a\", \"parameters\": {}} and then {oops")}) {
        ToolCallDelta d = parse_all_ways(ToolCallFormat::llama3, s);
        if (s.find("and then") != std::string::npos) {
            ASSERT_EQ(d.calls.size(), 1u);  // the call, then the rest as text
            EXPECT_EQ(d.content, "and then {oops");
        } else {
            EXPECT_TRUE(d.calls.empty()) << s;
            EXPECT_EQ(d.content, s);
        }
    }
}

TEST(ToolCalls, MistralForms) {
    ToolCallDelta d = parse_all_ways(ToolCallFormat::mistral,
                                     "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}, \"id\": "
                                     "\"abcDEF123\"}, {\"name\": \"b\", \"arguments\": {}}]");
    ASSERT_EQ(d.calls.size(), 2u);
    EXPECT_EQ(d.calls[0].id, "abcDEF123");
    EXPECT_EQ(d.calls[0].arguments, "{\"x\":1}");
    EXPECT_EQ(d.calls[1].name, "b");
    EXPECT_EQ(d.content, "");

    // Small 3.2 / Devstral: name[ARGS]{...}, one segment per call, optional [CALL_ID].
    d = parse_all_ways(ToolCallFormat::mistral,
                       "Checking.[TOOL_CALLS]get_time[ARGS]{\"tz\": \"UTC\"}[TOOL_CALLS]get_date[CALL_ID]x1[ARGS]{}");
    ASSERT_EQ(d.calls.size(), 2u);
    EXPECT_EQ(d.calls[0].name, "get_time");
    EXPECT_EQ(d.calls[0].arguments, "{\"tz\":\"UTC\"}");
    EXPECT_EQ(d.calls[1].name, "get_date");
    EXPECT_EQ(d.calls[1].id, "x1");
    EXPECT_EQ(d.content, "Checking.");

    // The opener is a control token that plain detokenization drops: the bare array still parses.
    d = parse_all_ways(ToolCallFormat::mistral, " [{\"name\": \"a\", \"arguments\": {}}]");
    ASSERT_EQ(d.calls.size(), 1u);

    for (const std::string& s : {std::string("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {]"),
                                 std::string("[TOOL_CALLS]bad name[ARGS]{}"), std::string("[1] is a citation")}) {
        d = parse_all_ways(ToolCallFormat::mistral, s);
        EXPECT_TRUE(d.calls.empty()) << s;
        EXPECT_EQ(d.content, s);
    }
}

TEST(ToolCalls, GenericFallback) {
    ToolCallDelta d = parse_all_ways(ToolCallFormat::generic,
                                     "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": "
                                     "\"b\", \"arguments\": \"{\\\"y\\\": 2}\"}]}");
    ASSERT_EQ(d.calls.size(), 2u);
    EXPECT_EQ(d.calls[1].arguments, "{\"y\": 2}");  // a string argument is kept as the model wrote it
    d = parse_all_ways(ToolCallFormat::generic,
                       "```json\n{\"tool_call\": {\"name\": \"f\", \"arguments\": {}}}\n```\n");
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.content, "");
    d = parse_all_ways(ToolCallFormat::generic,
                       "{\"type\": \"function\", \"function\": {\"name\": \"g\", \"arguments\": {\"z\": null}}}");
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.calls[0].name, "g");
    EXPECT_EQ(d.calls[0].arguments, "{\"z\":null}");
    // Several bare calls one after another; JSON that is not a call ends them and stays text.
    d = parse_all_ways(ToolCallFormat::generic,
                       "{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\", \"arguments\": {}} {\"x\": 1}");
    ASSERT_EQ(d.calls.size(), 2u);
    EXPECT_EQ(d.calls[1].name, "b");
    EXPECT_EQ(d.content, "{\"x\": 1}");
    for (const std::string& s : {std::string("Just text, no call."), std::string("```python\nprint(1)\n```"),
                                 std::string("{\"tool_calls\": []}"), std::string("{\"name\": 5}")}) {
        d = parse_all_ways(ToolCallFormat::generic, s);
        EXPECT_TRUE(d.calls.empty()) << s;
        EXPECT_EQ(d.content, s);
    }
}

TEST(ToolCalls, GarbageNeverCrashes) {
    // Deterministic pseudo-random byte soup built from the formats' markers.
    const char* atoms[] =
        {"<tool_call>", "</tool_call>",   "{", "}",  "[",   "]",        "\"", "\\", "name", ":", ",", "[TOOL_CALLS]",
         "[ARGS]",      "<|python_tag|>", " ", "\n", "```", "arguments"};
    uint32_t x = 12345;
    for (int round = 0; round < 300; round++) {
        std::string s;
        for (int i = 0; i < 40; i++) {
            x = x * 1664525u + 1013904223u;
            s += atoms[(x >> 16) % (sizeof atoms / sizeof *atoms)];
        }
        for (ToolCallFormat f :
             {ToolCallFormat::hermes, ToolCallFormat::llama3, ToolCallFormat::mistral, ToolCallFormat::generic})
            parse_all_ways(f, s);
    }
}
