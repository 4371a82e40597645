// server/responses_api: Responses API request → OpenAI chat body; output items, usage, response object.
#include "server/responses_api.h"

#include <ctime>

#include "base/error.h"
#include "server/http_util.h"
#include "server/response.h"

namespace bee::server {

namespace {

// A message item's content: a string, or parts (input_text / output_text / refusal) joined.
std::string content_text(const Json& item, const std::string& where) {
    const Json* c = opt_field(item, "content");
    if (!c) return "";
    if (c->is_string()) return c->get<std::string>();
    if (!c->is_array()) bad_request("%s.content must be a string or an array of parts", where.c_str());
    std::string text;
    for (size_t i = 0; i < c->size(); i++) {
        const Json& p = (*c)[i];
        const std::string w = strfmt("%s.content[%zu]", where.c_str(), i);
        if (!p.is_object()) bad_request("%s must be an object", w.c_str());
        const std::string type = need_string(p, "type", w);
        if (type == "input_text" || type == "output_text") text += need_string(p, "text", w);
        else if (type == "refusal") text += need_string(p, "refusal", w);
        else if (type == "input_image" || type == "input_file" || type == "input_audio")
            bad_request("%s: %s input is not supported (text-only model, no image projector)", w.c_str(),
                        type.substr(6).c_str());
        else bad_request("%s.type '%s': expected input_text, output_text or refusal", w.c_str(), type.c_str());
    }
    return text;
}

// The assistant message that assistant-side items (text, calls, reasoning) join: the last message if it
// is the assistant's, else a new one.
Json& assistant_turn(Json& messages) {
    if (messages.empty() || messages.back().value("role", "") != "assistant")
        messages.push_back({{"role", "assistant"}, {"content", ""}});
    return messages.back();
}

void convert_item(const Json& item, size_t i, Json& messages) {
    const std::string where = strfmt("input[%zu]", i);
    if (!item.is_object()) bad_request("%s must be an object", where.c_str());
    const std::string type = opt_field(item, "type") ? need_string(item, "type", where) : "message";
    if (type == "message") {
        std::string role = need_string(item, "role", where);
        const std::string text = content_text(item, where);
        if (role == "assistant") {
            Json& turn = assistant_turn(messages);
            turn["content"] = turn["content"].get<std::string>() + text;
            return;
        }
        if (role != "user" && role != "system" && role != "developer")
            bad_request("%s.role '%s': expected user, system, developer or assistant", where.c_str(), role.c_str());
        messages.push_back({{"role", role == "developer" ? "system" : role}, {"content", text}});
    } else if (type == "function_call") {
        Json& turn = assistant_turn(messages);
        if (!turn.contains("tool_calls")) turn["tool_calls"] = Json::array();
        turn["tool_calls"].push_back(
            {{"id", need_string(item, "call_id", where)},
             {"type", "function"},
             {"function",
              {{"name", need_string(item, "name", where)}, {"arguments", need_string(item, "arguments", where)}}}});
    } else if (type == "function_call_output") {
        const Json* out = opt_field(item, "output");
        std::string text;
        if (out && out->is_array()) text = content_text({{"content", *out}}, where + ".output");
        else if (out && out->is_string()) text = out->get<std::string>();
        else bad_request("%s.output must be a string or an array of input_text parts", where.c_str());
        messages.push_back(
            {{"role", "tool"}, {"tool_call_id", need_string(item, "call_id", where)}, {"content", text}});
    } else if (type == "reasoning") {
        std::string text;
        for (const char* key : {"content", "summary"}) {
            const Json* parts = opt_field(item, key);
            if (parts && !parts->is_array()) bad_request("%s.%s must be an array", where.c_str(), key);
            if (!parts || !text.empty()) continue;
            for (size_t k = 0; k < parts->size(); k++)
                text += need_string((*parts)[k], "text", strfmt("%s.%s[%zu]", where.c_str(), key, k));
        }
        Json& turn = assistant_turn(messages);
        turn["reasoning_content"] = turn.value("reasoning_content", "") + text;
    } else {
        bad_request("%s.type '%s' is not supported: expected message, function_call, function_call_output or reasoning",
                    where.c_str(), type.c_str());
    }
}

Json convert_tools(const Json& tools) {
    if (!tools.is_array()) bad_request("'tools' must be an array");
    Json out = Json::array();
    for (size_t i = 0; i < tools.size(); i++) {
        const Json& t = tools[i];
        const std::string w = strfmt("tools[%zu]", i);
        if (!t.is_object()) bad_request("%s must be an object", w.c_str());
        if (need_string(t, "type", w) != "function")
            continue;  // built-in tools (web_search, ...) have no local meaning
        out.push_back(function_tool(t, "parameters", w));
    }
    return out;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "name": ...} → the chat form.
Json convert_tool_choice(const Json& tc) {
    if (tc.is_string()) return tc;
    if (!tc.is_object()) bad_request("'tool_choice' must be a string or an object");
    if (need_string(tc, "type", "tool_choice") != "function")
        bad_request("tool_choice.type '%s' is not supported: expected function", tc["type"].get<std::string>().c_str());
    if (opt_field(tc, "function")) return tc;  // already in the chat form
    return {{"type", "function"}, {"function", {{"name", need_string(tc, "name", "tool_choice")}}}};
}

// text.format → response_format.
void convert_text_format(const Json& text, Json& chat) {
    if (!text.is_object()) bad_request("'text' must be an object");
    const Json* f = opt_field(text, "format");
    if (!f) return;
    if (!f->is_object()) bad_request("'text.format' must be an object");
    const std::string type = need_string(*f, "type", "text.format");
    if (type == "json_object") {
        chat["response_format"] = {{"type", "json_object"}};
    } else if (type == "json_schema") {
        const Json* schema = opt_field(*f, "schema");
        if (!schema || !schema->is_object()) bad_request("'text.format.schema' must be an object");
        chat["response_format"] = {{"type", "json_schema"},
                                   {"json_schema",
                                    {{"name", get_string(*f, "name", "response")}, {"schema", *schema}}}};
    } else if (type != "text") {
        bad_request("text.format.type '%s': expected text, json_object or json_schema", type.c_str());
    }
}

}  // namespace

Json responses_to_chat(const Json& body) {
    if (!get_string(body, "previous_response_id", "").empty())
        bad_request("'previous_response_id' is not supported: send the whole conversation in 'input'");
    Json chat = body;
    for (const char* key : {"input", "instructions", "tools", "tool_choice", "max_output_tokens", "text", "reasoning",
                            "previous_response_id", "store", "include", "metadata", "truncation", "user",
                            "service_tier", "background", "prompt", "top_logprobs", "conversation", "prompt_cache_key"})
        chat.erase(key);
    Json messages = Json::array();
    if (opt_field(body, "instructions"))
        messages.push_back({{"role", "system"}, {"content", get_string(body, "instructions", "")}});
    const Json* input = opt_field(body, "input");
    if (!input) bad_request("'input' is required");
    if (input->is_string()) {
        messages.push_back({{"role", "user"}, {"content", *input}});
    } else if (input->is_array()) {
        for (size_t i = 0; i < input->size(); i++) convert_item((*input)[i], i, messages);
    } else {
        bad_request("'input' must be a string or an array of items");
    }
    chat["messages"] = std::move(messages);
    if (const Json* tools = opt_field(body, "tools")) chat["tools"] = convert_tools(*tools);
    if (const Json* tc = opt_field(body, "tool_choice")) chat["tool_choice"] = convert_tool_choice(*tc);
    if (opt_field(body, "max_output_tokens")) chat["max_tokens"] = get_int(body, "max_output_tokens", -1, 1, INT32_MAX);
    if (const Json* text = opt_field(body, "text")) convert_text_format(*text, chat);
    if (const Json* r = opt_field(body, "reasoning"); r && !r->is_object())
        bad_request("'reasoning' must be an object");
    return chat;
}

Json responses_reasoning_item(const std::string& id, const std::string& text, const char* status) {
    Json content = Json::array();
    if (!text.empty()) content.push_back({{"type", "reasoning_text"}, {"text", text}});
    return {{"id", id},
            {"type", "reasoning"},
            {"summary", Json::array()},
            {"content", std::move(content)},
            {"encrypted_content", ""},
            {"status", status}};
}

Json responses_message_item(const std::string& id, const std::string& text, const char* status) {
    Json content = Json::array();
    if (std::string(status) == "completed")
        content.push_back(
            {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}});
    return {{"id", id},
            {"type", "message"},
            {"role", "assistant"},
            {"status", status},
            {"content", std::move(content)}};
}

Json responses_call_item(const chat::ToolCall& c, const char* status) {
    return {{"id", random_id("fc_")}, {"type", "function_call"},
            {"status", status},       {"call_id", c.id.empty() ? random_id("call_") : c.id},
            {"name", c.name},         {"arguments", c.arguments}};
}

Json responses_usage(const runtime::FinishInfo& f) {
    return {{"input_tokens", f.n_prompt},
            {"input_tokens_details", {{"cached_tokens", f.n_cached}}},
            {"output_tokens", f.n_predicted},
            {"output_tokens_details", {{"reasoning_tokens", f.n_reasoning}}},
            {"total_tokens", f.n_prompt + f.n_predicted}};
}

Json responses_object(const std::string& id, int64_t created, const std::string& model, Json output,
                      const runtime::FinishInfo* f) {
    const bool incomplete = f && f->stop_type != runtime::StopType::eos && f->stop_type != runtime::StopType::word;
    Json r = {{"id", id}, {"object", "response"}, {"created_at", created}};
    r["status"] = !f ? "in_progress" : incomplete ? "incomplete" : "completed";
    if (f) r["completed_at"] = (int64_t)time(nullptr);
    r["error"] = nullptr;
    r["incomplete_details"] = incomplete ? Json{{"reason", "max_output_tokens"}} : Json(nullptr);
    r["model"] = model;
    r["output"] = std::move(output);
    if (f) r["usage"] = responses_usage(*f);
    return r;
}

}  // namespace bee::server
