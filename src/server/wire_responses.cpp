// server/wire_responses: Responses API request → OpenAI chat body → chat request; output items, SSE events,
// usage, response object.
#include "server/wire_responses.h"

#include <ctime>
#include <memory>

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

namespace {

// The output items of one streamed response, opened one at a time in generation order (reasoning,
// message, function calls), each finished before the next starts; every event carries sequence_number.
struct ResponsesStream {
    ResponsesStream(const ToolMode& m, std::string id, int64_t created, std::string model)
        : tools(m), id(std::move(id)), created(created), model(std::move(model)) {
        if (m.parse) parser = std::make_unique<chat::ToolCallParser>(m.format);
    }
    ToolMode tools;
    std::string id;
    int64_t created;
    std::string model;
    std::unique_ptr<chat::ToolCallParser> parser;  // with tools: holds text that may be a call
    Json output = Json::array();                   // finished items
    std::string open_kind, open_id, open_text;     // the item being streamed ("reasoning" or "message")
    int64_t seq = 0;
    size_t n_calls = 0;

    Json ev(const char* type, Json fields) {
        Json e = {{"type", type}, {"sequence_number", seq++}};
        for (auto it = fields.begin(); it != fields.end(); ++it) e[it.key()] = it.value();
        return e;
    }
    Json shell() { return responses_object(id, created, model, Json::array(), nullptr); }
    int index() const { return (int)output.size(); }  // output_index of the open (or next) item

    void close(std::vector<Json>& out) {
        if (open_kind.empty()) return;
        const Json loc = {{"item_id", open_id}, {"output_index", index()}, {"content_index", 0}};
        Json item;
        if (open_kind == "reasoning") {
            Json f = loc;
            f["text"] = open_text;
            out.push_back(ev("response.reasoning_text.done", std::move(f)));
            item = responses_reasoning_item(open_id, open_text, "completed");
        } else {
            Json f = loc;
            f["text"] = open_text;
            f["logprobs"] = Json::array();
            out.push_back(ev("response.output_text.done", std::move(f)));
            item = responses_message_item(open_id, open_text, "completed");
            Json p = loc;
            p["part"] = item["content"][0];
            out.push_back(ev("response.content_part.done", std::move(p)));
        }
        out.push_back(ev("response.output_item.done", {{"output_index", index()}, {"item", item}}));
        output.push_back(std::move(item));
        open_kind.clear();
        open_text.clear();
    }
    void open(std::vector<Json>& out, const char* kind) {
        close(out);
        open_kind = kind;
        open_id = random_id(open_kind == "reasoning" ? "rs_" : "msg_");
        const Json item = open_kind == "reasoning" ? responses_reasoning_item(open_id, "", "in_progress")
                                                   : responses_message_item(open_id, "", "in_progress");
        out.push_back(ev("response.output_item.added", {{"output_index", index()}, {"item", item}}));
        if (open_kind == "message") {
            const Json part = {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}};
            out.push_back(ev("response.content_part.added",
                             {{"item_id", open_id}, {"output_index", index()}, {"content_index", 0}, {"part", part}}));
        }
    }
    void reasoning(std::vector<Json>& out, const std::string& text) {
        if (open_kind != "reasoning") open(out, "reasoning");
        open_text += text;
        out.push_back(ev("response.reasoning_text.delta",
                         {{"item_id", open_id}, {"output_index", index()}, {"content_index", 0}, {"delta", text}}));
    }
    void text(std::vector<Json>& out, const std::string& text) {
        if (open_kind != "message") {
            if (n_calls > 0 && text.find_first_not_of(" \t\r\n") == std::string::npos) return;  // blank after a call
            open(out, "message");
        }
        open_text += text;
        out.push_back(ev("response.output_text.delta", {{"item_id", open_id},
                                                        {"output_index", index()},
                                                        {"content_index", 0},
                                                        {"delta", text},
                                                        {"logprobs", Json::array()}}));
    }
    // Text and whole calls released by the parser; each call is one function_call item, arguments at once.
    void content(std::vector<Json>& out, chat::ToolCallDelta d) {
        if (!d.content.empty()) text(out, d.content);
        for (const chat::ToolCall& c : limit_calls(std::move(d.calls), tools, n_calls)) {
            close(out);
            Json item = responses_call_item(c, "in_progress");
            item["arguments"] = "";
            out.push_back(ev("response.output_item.added", {{"output_index", index()}, {"item", item}}));
            const Json loc = {{"item_id", item["id"]}, {"output_index", index()}};
            Json delta = loc, done = loc;
            delta["delta"] = c.arguments;
            out.push_back(ev("response.function_call_arguments.delta", std::move(delta)));
            done["name"] = c.name;
            done["arguments"] = c.arguments;
            out.push_back(ev("response.function_call_arguments.done", std::move(done)));
            item["status"] = "completed";
            item["arguments"] = c.arguments;
            out.push_back(ev("response.output_item.done", {{"output_index", index()}, {"item", item}}));
            output.push_back(std::move(item));
            n_calls++;
        }
    }
};

}  // namespace

StreamFormat responses_stream_format(const ServerContext& ctx, const ChatRequest& cr, const std::string& id) {
    auto st = std::make_shared<ResponsesStream>(cr.tools, id, (int64_t)time(nullptr), ctx.model_name);
    StreamFormat fmt;
    fmt.done_sentinel = false;
    fmt.event_names = true;
    fmt.start = [st] {
        return std::vector<Json>{st->ev("response.created", {{"response", st->shell()}}),
                                 st->ev("response.in_progress", {{"response", st->shell()}})};
    };
    fmt.progress = [st](const TaskEvent& e) {
        return st->ev("response.in_progress", {{"response", st->shell()}, {"prompt_progress", progress_json(e)}});
    };
    fmt.delta = [st](const TaskEvent& e) {
        std::vector<Json> out;
        if (!e.reasoning.empty()) st->reasoning(out, e.reasoning);
        if (!e.content.empty())
            st->content(out, st->parser ? st->parser->feed(e.content) : chat::ToolCallDelta{e.content, {}});
        return out;
    };
    fmt.done = [st](const FinishInfo& f) {
        std::vector<Json> out;
        if (st->parser) st->content(out, st->parser->finish());
        st->close(out);
        Json done = st->ev("response.completed",
                           {{"response", responses_object(st->id, st->created, st->model, st->output, &f)}});
        done["timings"] = timings_json(f);
        out.push_back(std::move(done));
        return out;
    };
    fmt.error = [st](const TaskEvent& e) {
        return st->ev("error", {{"code", e.error_type},
                                {"message", e.error_message},
                                {"param", nullptr},
                                {"error", error_json(e.http_status, e.error_type, e.error_message)["error"]}});
    };
    return fmt;
}

Json responses_output_items(const std::string& reasoning, const chat::ToolCallDelta& d) {
    Json out = Json::array();
    if (!reasoning.empty()) out.push_back(responses_reasoning_item(random_id("rs_"), reasoning, "completed"));
    const bool blank = d.content.find_first_not_of(" \t\r\n") == std::string::npos;
    if (!d.content.empty() && !(blank && !d.calls.empty()))
        out.push_back(responses_message_item(random_id("msg_"), d.content, "completed"));
    for (const chat::ToolCall& c : d.calls) out.push_back(responses_call_item(c, "completed"));
    return out;
}

TranslatedChatRequest read_responses_request(ServerContext& ctx, const Json& body) {
    return prepare_translated_chat(ctx, responses_to_chat(body), false);
}

std::vector<int32_t> read_responses_input_tokens(const ServerContext& ctx, const Json& body) {
    return chat_prompt_tokens(ctx, responses_to_chat(body), false);
}

}  // namespace bee::server
