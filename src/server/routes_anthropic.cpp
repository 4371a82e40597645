// server/routes_anthropic: the Anthropic Messages API — POST /v1/messages (one JSON reply or SSE events)
// and /v1/messages/count_tokens. The body is read and the reply shaped by server/wire_anthropic (onto the
// chat pipeline); errors are answered in Anthropic's shape.
#include "server/response.h"
#include "server/routes.h"
#include "server/wire_anthropic.h"

namespace bee::server {

namespace {

void handle_messages(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const TranslatedChatRequest ar = read_anthropic_request(ctx, parse_body(req));
    const std::string id = random_id("msg_");
    if (ar.stream) {
        stream_task(ctx, req, res, ar.task, anthropic_stream_format(ctx, ar.chat, id));
        return;
    }
    const TaskResult r = run_task(ctx, req, ar.task);
    const chat::ToolCallDelta d = split_tool_calls(ar.chat.tools, r.content);
    send_json(res, anthropic_message(id, ctx.model_name, r.reasoning, d.content, d.calls, r.finish));
}

void handle_count_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    send_json(res, {{"input_tokens", (int64_t)read_anthropic_count_tokens(ctx, parse_body(req)).size()}});
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
