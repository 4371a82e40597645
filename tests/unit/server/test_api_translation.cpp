// tests/unit/server/test_api_translation: the Anthropic Messages and OpenAI Responses bodies translated
// into chat bodies (server/wire_anthropic, server/wire_responses), and 400s for fields of the wrong type.
#include <gtest/gtest.h>

#include "server/wire_anthropic.h"
#include "server/wire_responses.h"

using bee::server::HttpError;
using bee::server::Json;

namespace {

int status_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const HttpError& e) {
        return e.status;
    }
    return 200;
}

TEST(AnthropicToChat, SystemBlocksToolTurnsAndFields) {
    const Json body = Json::parse(R"({
        "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "use the tool"},
                                              {"type": "text", "text": "Checking."},
                                              {"type": "tool_use", "id": "t1", "name": "w", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": [{"type": "text", "text": "Sunny"}]},
                                         {"type": "text", "text": "Thanks"}]}],
        "tools": [{"name": "w", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "w", "disable_parallel_tool_use": true},
        "stop_sequences": ["END"], "temperature": 0.5, "top_k": 3, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 64}})");
    const Json chat = bee::server::anthropic_to_chat(body);
    const Json& m = chat["messages"];
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m[0], Json::parse(R"({"role": "system", "content": "Be brief."})"));
    EXPECT_EQ(m[2]["content"], "Checking.");
    EXPECT_EQ(m[2]["reasoning_content"], "use the tool");
    EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], R"({"city":"Oslo"})");
    EXPECT_EQ(m[3], Json::parse(R"({"role": "tool", "tool_call_id": "t1", "content": "Sunny"})"));  // results first
    EXPECT_EQ(m[4], Json::parse(R"({"role": "user", "content": "Thanks"})"));
    EXPECT_EQ(chat["tools"][0]["function"]["parameters"], Json::parse(R"({"type": "object"})"));
    EXPECT_EQ(chat["tool_choice"]["function"]["name"], "w");
    EXPECT_EQ(chat["parallel_tool_calls"], false);
    EXPECT_EQ(chat["stop"], Json::parse(R"(["END"])"));
    EXPECT_EQ(chat["max_tokens"], bee::server::kAnthropicDefaultMaxTokens);
    EXPECT_EQ(chat["top_k"], 3);
    EXPECT_EQ(chat["thinking_budget_tokens"], 64);
    EXPECT_EQ(bee::server::anthropic_to_chat(
                  Json::parse(R"({"messages": [], "tool_choice": {"type": "any"}})"))["tool_choice"],
              "required");
}

TEST(AnthropicToChat, WrongTypesAre400) {
    for (const char* text : {R"({})", R"({"messages": {}})", R"({"messages": [{"role": 1, "content": "x"}]})",
                             R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
                             R"({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]})",
                             R"({"messages": [], "system": {}})", R"({"messages": [], "max_tokens": 0})",
                             R"({"messages": [], "stop_sequences": [1]})", R"({"messages": [], "tool_choice": "auto"})",
                             R"({"messages": [], "tools": [{"input_schema": {}}]})"})
        EXPECT_EQ(status_of([&] { bee::server::anthropic_to_chat(Json::parse(text)); }), 400) << text;
}

TEST(AnthropicReply, StopReasonsAndBlocks) {
    bee::runtime::FinishInfo f;
    f.stop_type = bee::runtime::StopType::word;
    f.stopping_word = "END";
    f.n_prompt = 10;
    f.n_cached = 4;
    f.n_predicted = 3;
    const Json m = bee::server::anthropic_message("msg_1", "m", "", "Hi", {}, f);
    EXPECT_EQ(m["stop_reason"], "stop_sequence");
    EXPECT_EQ(m["stop_sequence"], "END");
    EXPECT_EQ(m["usage"]["input_tokens"], 6);
    EXPECT_EQ(m["usage"]["cache_read_input_tokens"], 4);
    f.stop_type = bee::runtime::StopType::eos;
    const Json t = bee::server::anthropic_message("msg_2", "m", "hmm", "\n", {{"w", R"({"a": 1})", "c1"}}, f);
    ASSERT_EQ(t["content"].size(), 2u);  // thinking, tool_use (the blank text is dropped)
    EXPECT_EQ(t["content"][1]["input"], Json::parse(R"({"a": 1})"));
    EXPECT_EQ(t["stop_reason"], "tool_use");
    f.stop_type = bee::runtime::StopType::limit;
    EXPECT_STREQ(bee::server::anthropic_stop_reason(f, false), "max_tokens");
}

TEST(ResponsesToChat, ItemsMergeIntoTurns) {
    const Json body = Json::parse(R"({
        "instructions": "Be brief.", "temperature": 0.2, "store": false, "max_output_tokens": 9,
        "input": [
            {"role": "developer", "content": "Use tools."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "call it"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "Sunny"}],
        "tools": [{"type": "function", "name": "w", "parameters": {"type": "object"}}, {"type": "web_search"}],
        "tool_choice": {"type": "function", "name": "w"},
        "text": {"format": {"type": "json_schema", "name": "a", "schema": {"type": "object"}}}})");
    const Json chat = bee::server::responses_to_chat(body);
    const Json& m = chat["messages"];
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m[0]["role"], "system");
    EXPECT_EQ(m[1], Json::parse(R"({"role": "system", "content": "Use tools."})"));
    EXPECT_EQ(m[3]["role"], "assistant");
    EXPECT_EQ(m[3]["content"], "Checking.");
    EXPECT_EQ(m[3]["reasoning_content"], "call it");
    EXPECT_EQ(m[3]["tool_calls"][0]["id"], "c1");
    EXPECT_EQ(m[4], Json::parse(R"({"role": "tool", "tool_call_id": "c1", "content": "Sunny"})"));
    EXPECT_EQ(chat["tools"].size(), 1u);
    EXPECT_EQ(chat["tool_choice"]["function"]["name"], "w");
    EXPECT_EQ(chat["max_tokens"], 9);
    EXPECT_EQ(chat["temperature"], 0.2);
    EXPECT_EQ(chat["response_format"]["json_schema"]["schema"], Json::parse(R"({"type": "object"})"));
    EXPECT_FALSE(chat.contains("input") || chat.contains("store") || chat.contains("text"));
}

TEST(ResponsesToChat, WrongTypesAre400) {
    for (const char* text :
         {R"({})", R"({"input": 1})", R"({"input": [1]})", R"({"input": [{"role": "user", "content": 2}]})",
          R"({"input": [{"type": "item_reference"}]})", R"({"input": "x", "previous_response_id": "r"})",
          R"({"input": "x", "tools": [{"type": "function"}]})", R"({"input": "x", "tool_choice": 3})",
          R"({"input": "x", "text": {"format": {"type": "yaml"}}})",
          R"({"input": [{"type": "function_call", "call_id": "c", "name": "w"}]})"})
        EXPECT_EQ(status_of([&] { bee::server::responses_to_chat(Json::parse(text)); }), 400) << text;
}

TEST(ResponsesReply, StatusAndUsage) {
    bee::runtime::FinishInfo f;
    f.stop_type = bee::runtime::StopType::limit;
    f.n_prompt = 7;
    f.n_predicted = 2;
    const Json r = bee::server::responses_object("resp_1", 1, "m", Json::array(), &f);
    EXPECT_EQ(r["status"], "incomplete");
    EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(r["usage"]["total_tokens"], 9);
    EXPECT_EQ(bee::server::responses_object("resp_1", 1, "m", Json::array(), nullptr)["status"], "in_progress");
}

}  // namespace
