// server/routes_anthropic: the Anthropic Messages API — POST /v1/messages (one JSON reply or SSE events)
// and /v1/messages/count_tokens — translated onto the chat pipeline (server/chat_request) and answered
// in Anthropic's shapes (server/anthropic_api), errors included.
#include <memory>

#include "server/anthropic_api.h"
#include "server/chat_request.h"
#include "server/response.h"
#include "server/routes.h"

namespace bee::server {

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

void handle_messages(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json chat = anthropic_to_chat(parse_body(req));
    const ChatRequest cr = prepare_chat(ctx, chat, true);
    auto task = make_task(ctx, cr.tokens, cr.gen);
    const std::string id = random_id("msg_");
    if (get_bool(chat, "stream", false)) {
        stream_task(ctx, res, std::move(task), anthropic_stream_format(ctx, cr, id));
        return;
    }
    const TaskResult r = run_task(ctx, req, task);
    const chat::ToolCallDelta d = split_tool_calls(cr.tools, r.content);
    send_json(res, anthropic_message(id, ctx.model_name, r.reasoning, d.content, d.calls, r.finish));
}

// The prompt's token count through the template, as /v1/messages would run it.
void handle_count_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const ChatPrompt cp = render_chat_prompt(ctx, anthropic_to_chat(parse_body(req)), true);
    send_json(res, {{"input_tokens", (int64_t)ctx.tokenizer().encode(cp.text, true, true).size()}});
}

// `guarded`, with the error body in Anthropic's shape ({"type": "error", "error": {...}}).
httplib::Server::Handler anthropic_guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn) {
    return [inner = guarded(std::move(fn))](const httplib::Request& req, httplib::Response& res) {
        inner(req, res);
        if (res.status < 400) return;
        const Json e = Json::parse(res.body, nullptr, false);
        if (!e.is_object() || !e.contains("error") || !e["error"].is_object()) return;
        const Json& err = e["error"];
        send_json(res, anthropic_error(res.status, err.value("type", "api_error"), err.value("message", "")),
                  res.status);
    };
}

}  // namespace

void register_anthropic_routes(RouteTable& svr, ServerContext& ctx) {
    svr.Post("/v1/messages", anthropic_guarded([&ctx](const httplib::Request& q, httplib::Response& r) {
                 handle_messages(ctx, q, r);
             }));
    svr.Post("/v1/messages/count_tokens", anthropic_guarded([&ctx](const httplib::Request& q, httplib::Response& r) {
                 handle_count_tokens(ctx, q, r);
             }));
}

}  // namespace bee::server
