// server/wire_anthropic: Messages API request → OpenAI chat body → chat request; reply, SSE events, usage
// and error objects.
#include "server/wire_anthropic.h"

#include "base/error.h"
#include "server/http_util.h"
#include "server/response.h"

#include <memory>

namespace bee::server {

namespace {

// The `type` of a content block (400 unless the block is an object with a string type).
std::string block_type(const Json& b, const std::string& where) {
    if (!b.is_object()) bad_request("%s must be an object", where.c_str());
    return need_string(b, "type", where);
}

// `kind` is "image" or "document".
[[noreturn]] void no_media(const std::string& where, const std::string& kind) {
    bad_request("%s: %s input is not supported (text-only model, no image projector)", where.c_str(), kind.c_str());
}

// A tool_result's content: a string, text blocks (joined), or nothing.
std::string tool_result_text(const Json& block, const std::string& where) {
    const Json* c = opt_field(block, "content");
    if (!c) return "";
    if (c->is_string()) return c->get<std::string>();
    if (!c->is_array()) bad_request("%s.content must be a string or an array of blocks", where.c_str());
    std::string text;
    for (size_t i = 0; i < c->size(); i++) {
        const std::string w = strfmt("%s.content[%zu]", where.c_str(), i);
        const std::string type = block_type((*c)[i], w);
        if (type == "text") text += need_string((*c)[i], "text", w);
        else if (type == "image" || type == "document") no_media(w, type);
    }
    return text;
}

// The system prompt: a string or text blocks (joined).
std::string system_text(const Json& sys) {
    if (sys.is_string()) return sys.get<std::string>();
    if (!sys.is_array()) bad_request("'system' must be a string or an array of text blocks");
    std::string text;
    for (size_t i = 0; i < sys.size(); i++) {
        const std::string w = strfmt("system[%zu]", i);
        if (block_type(sys[i], w) != "text") bad_request("%s: only text blocks are allowed in 'system'", w.c_str());
        text += need_string(sys[i], "text", w);
    }
    return text;
}

// One Anthropic message → OpenAI messages appended to `out`: the tool results first (each a "tool"
// message answering its tool_use), then the turn's text, reasoning and tool calls.
void convert_message(const Json& m, size_t i, Json& out) {
    const std::string where = strfmt("messages[%zu]", i);
    if (!m.is_object()) bad_request("%s must be an object", where.c_str());
    const std::string role = need_string(m, "role", where);
    const Json* content = opt_field(m, "content");
    if (!content) bad_request("%s.content is required", where.c_str());
    if (content->is_string()) {
        out.push_back({{"role", role}, {"content", *content}});
        return;
    }
    if (!content->is_array()) bad_request("%s.content must be a string or an array of content blocks", where.c_str());
    std::string text, reasoning;
    Json calls = Json::array();
    for (size_t k = 0; k < content->size(); k++) {
        const Json& b = (*content)[k];
        const std::string w = strfmt("%s.content[%zu]", where.c_str(), k);
        const std::string type = block_type(b, w);
        if (type == "text") {
            text += need_string(b, "text", w);
        } else if (type == "thinking") {
            reasoning += need_string(b, "thinking", w);
        } else if (type == "image" || type == "document") {
            no_media(w, type);
        } else if (type == "tool_use") {
            const Json* input = opt_field(b, "input");
            if (input && !input->is_object()) bad_request("%s.input must be an object", w.c_str());
            calls.push_back(
                {{"id", need_string(b, "id", w)},
                 {"type", "function"},
                 {"function",
                  {{"name", need_string(b, "name", w)}, {"arguments", input ? input->dump() : std::string("{}")}}}});
        } else if (type == "tool_result") {
            out.push_back({{"role", "tool"},
                           {"tool_call_id", need_string(b, "tool_use_id", w)},
                           {"content", tool_result_text(b, w)}});
        }  // other block kinds (redacted_thinking, server tool blocks) carry nothing a local model reads
    }
    if (text.empty() && calls.empty() && reasoning.empty()) return;
    Json msg = {{"role", role}, {"content", text}};
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
    out.push_back(std::move(msg));
}

Json convert_tools(const Json& tools) {
    if (!tools.is_array()) bad_request("'tools' must be an array");
    Json out = Json::array();
    for (size_t i = 0; i < tools.size(); i++) {
        const Json& t = tools[i];
        const std::string w = strfmt("tools[%zu]", i);
        if (!t.is_object()) bad_request("%s must be an object", w.c_str());
        out.push_back(function_tool(t, "input_schema", w));
    }
    return out;
}

// tool_choice {type: auto | any | tool (with name) | none, disable_parallel_tool_use} → OpenAI's.
void convert_tool_choice(const Json& tc, Json& chat) {
    if (!tc.is_object()) bad_request("'tool_choice' must be an object such as {\"type\": \"auto\"}");
    const std::string type = need_string(tc, "type", "tool_choice");
    if (type == "auto" || type == "none") chat["tool_choice"] = type;
    else if (type == "any") chat["tool_choice"] = "required";
    else if (type == "tool")
        chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", need_string(tc, "name", "tool_choice")}}}};
    else bad_request("invalid tool_choice.type '%s': expected auto, any, tool or none", type.c_str());
    if (get_bool(tc, "disable_parallel_tool_use", false)) chat["parallel_tool_calls"] = false;
}

}  // namespace

Json anthropic_to_chat(const Json& body) {
    Json chat = Json::object();
    Json messages = Json::array();
    if (const Json* sys = opt_field(body, "system"))
        messages.push_back({{"role", "system"}, {"content", system_text(*sys)}});
    const Json* msgs = opt_field(body, "messages");
    if (!msgs) bad_request("'messages' is required");
    if (!msgs->is_array()) bad_request("'messages' must be an array");
    for (size_t i = 0; i < msgs->size(); i++) convert_message((*msgs)[i], i, messages);
    chat["messages"] = std::move(messages);
    if (const Json* tools = opt_field(body, "tools")) chat["tools"] = convert_tools(*tools);
    if (const Json* tc = opt_field(body, "tool_choice")) convert_tool_choice(*tc, chat);
    if (const Json* stop = opt_field(body, "stop_sequences")) {
        if (!stop->is_array()) bad_request("'stop_sequences' must be an array of strings");
        for (const Json& s : *stop)
            if (!s.is_string()) bad_request("'stop_sequences' must be an array of strings");
        chat["stop"] = *stop;
    }
    chat["max_tokens"] = get_int(body, "max_tokens", kAnthropicDefaultMaxTokens, 1, INT32_MAX);
    for (const char* key : {"temperature", "top_p", "top_k", "stream", "chat_template_kwargs", "lora"})
        if (const Json* v = opt_field(body, key)) chat[key] = *v;
    if (const Json* th = opt_field(body, "thinking")) {
        if (!th->is_object())
            bad_request("'thinking' must be an object such as {\"type\": \"enabled\", \"budget_tokens\": 1024}");
        if (get_string(*th, "type", "") == "enabled")
            chat["thinking_budget_tokens"] = get_int(*th, "budget_tokens", 10000, 0, INT32_MAX);
    }
    if (const Json* md = opt_field(body, "metadata"); md && !md->is_object())
        bad_request("'metadata' must be an object");
    return chat;
}

const char* anthropic_stop_reason(const runtime::FinishInfo& f, bool called_tools) {
    const bool ended = f.stop_type == runtime::StopType::eos || f.stop_type == runtime::StopType::word;
    if (ended && called_tools) return "tool_use";
    if (f.stop_type == runtime::StopType::word) return "stop_sequence";
    if (f.stop_type == runtime::StopType::eos) return "end_turn";
    return "max_tokens";
}

Json anthropic_usage(const runtime::FinishInfo& f) {
    return {{"input_tokens", f.n_prompt - f.n_cached},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", f.n_cached},
            {"output_tokens", f.n_predicted}};
}

Json anthropic_tool_use(const chat::ToolCall& c, bool with_input) {
    Json b = {{"type", "tool_use"}, {"id", c.id.empty() ? random_id("toolu_") : c.id}, {"name", c.name}};
    Json input = Json::object();
    if (with_input) {
        input = Json::parse(c.arguments, nullptr, false);
        if (!input.is_object()) input = Json::object();  // a call whose arguments are not a JSON object
    }
    b["input"] = std::move(input);
    return b;
}

Json anthropic_message(const std::string& id, const std::string& model, const std::string& reasoning,
                       const std::string& text, const std::vector<chat::ToolCall>& calls,
                       const runtime::FinishInfo& f) {
    Json content = Json::array();
    if (!reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", reasoning}, {"signature", ""}});
    const bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
    if (!text.empty() && !(blank && !calls.empty())) content.push_back({{"type", "text"}, {"text", text}});
    for (const chat::ToolCall& c : calls) content.push_back(anthropic_tool_use(c, true));
    return {{"id", id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", model},
            {"content", std::move(content)},
            {"stop_reason", anthropic_stop_reason(f, !calls.empty())},
            {"stop_sequence", f.stop_type == runtime::StopType::word ? Json(f.stopping_word) : Json(nullptr)},
            {"usage", anthropic_usage(f)}};
}

Json anthropic_error(int status, const std::string& type, const std::string& message) {
    return {{"type", "error"}, {"error", {{"type", type}, {"message", message}, {"code", status}}}};
}

namespace {

Json block_delta(int index, Json delta) {
    return {{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}};
}

// The content blocks of one streamed reply, opened one at a time in generation order (thinking, text,
// tool_use), each closed before the next opens, indices counting up from 0.
struct AnthropicBlocks {
    explicit AnthropicBlocks(const ToolMode& m) : tools(m) {
        if (m.parse) parser = std::make_unique<chat::ToolCallParser>(m.format);
    }
    ToolMode tools;
    std::unique_ptr<chat::ToolCallParser> parser;  // with tools: holds text that may be a call
    std::string open_kind;                         // "", "thinking" or "text"
    int next_index = 0;
    size_t n_calls = 0;

    void close(std::vector<Json>& out) {
        if (open_kind.empty()) return;
        if (open_kind == "thinking")  // clients expect a signature before a thinking block ends (empty here)
            out.push_back(block_delta(next_index - 1, {{"type", "signature_delta"}, {"signature", ""}}));
        out.push_back({{"type", "content_block_stop"}, {"index", next_index - 1}});
        open_kind.clear();
    }
    void open(std::vector<Json>& out, const char* kind, Json block) {
        close(out);
        out.push_back({{"type", "content_block_start"}, {"index", next_index++}, {"content_block", std::move(block)}});
        open_kind = kind;
    }
    void thinking(std::vector<Json>& out, const std::string& text) {
        if (open_kind != "thinking") open(out, "thinking", {{"type", "thinking"}, {"thinking", ""}});
        out.push_back(block_delta(next_index - 1, {{"type", "thinking_delta"}, {"thinking", text}}));
    }
    void text(std::vector<Json>& out, const std::string& text) {
        if (open_kind != "text") {
            const bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
            if (blank && n_calls > 0) return;  // the blank between or after calls (the reply JSON drops it too)
            open(out, "text", {{"type", "text"}, {"text", ""}});
        }
        out.push_back(block_delta(next_index - 1, {{"type", "text_delta"}, {"text", text}}));
    }
    // Text and whole calls released by the parser; each call is one tool_use block with its input at once.
    void content(std::vector<Json>& out, chat::ToolCallDelta d) {
        if (!d.content.empty()) text(out, d.content);
        for (const chat::ToolCall& c : limit_calls(std::move(d.calls), tools, n_calls)) {
            open(out, "tool_use", anthropic_tool_use(c, false));
            out.push_back(block_delta(next_index - 1, {{"type", "input_json_delta"}, {"partial_json", c.arguments}}));
            close(out);
            n_calls++;
        }
    }
};

}  // namespace

StreamFormat anthropic_stream_format(const ServerContext& ctx, const ChatRequest& cr, const std::string& id) {
    auto st = std::make_shared<AnthropicBlocks>(cr.tools);
    StreamFormat fmt;
    fmt.done_sentinel = false;
    fmt.event_names = true;
    const Json usage0 = {{"input_tokens", (int64_t)cr.tokens.size()},
                         {"cache_creation_input_tokens", 0},
                         {"cache_read_input_tokens", 0},
                         {"output_tokens", 0}};
    const Json message = {{"id", id},
                          {"type", "message"},
                          {"role", "assistant"},
                          {"model", ctx.model_name},
                          {"content", Json::array()},
                          {"stop_reason", nullptr},
                          {"stop_sequence", nullptr},
                          {"usage", usage0}};
    fmt.start = [message] { return std::vector<Json>{{{"type", "message_start"}, {"message", message}}}; };
    fmt.delta = [st](const TaskEvent& e) {
        std::vector<Json> out;
        if (!e.reasoning.empty()) st->thinking(out, e.reasoning);
        if (!e.content.empty())
            st->content(out, st->parser ? st->parser->feed(e.content) : chat::ToolCallDelta{e.content, {}});
        return out;
    };
    fmt.done = [st](const FinishInfo& f) {
        std::vector<Json> out;
        if (st->parser) st->content(out, st->parser->finish());
        st->close(out);
        Json delta = {{"stop_reason", anthropic_stop_reason(f, st->n_calls > 0)},
                      {"stop_sequence", f.stop_type == StopType::word ? Json(f.stopping_word) : Json(nullptr)}};
        out.push_back({{"type", "message_delta"}, {"delta", std::move(delta)}, {"usage", anthropic_usage(f)}});
        out.push_back({{"type", "message_stop"}});
        return out;
    };
    fmt.error = [](const TaskEvent& e) { return anthropic_error(e.http_status, e.error_type, e.error_message); };
    return fmt;
}

TranslatedChatRequest read_anthropic_request(ServerContext& ctx, const Json& body) {
    return prepare_translated_chat(ctx, anthropic_to_chat(body), true);
}

std::vector<int32_t> read_anthropic_count_tokens(const ServerContext& ctx, const Json& body) {
    return chat_prompt_tokens(ctx, anthropic_to_chat(body), true);
}

}  // namespace bee::server
