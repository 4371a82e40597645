// server/routes_responses: the OpenAI Responses API — POST /v1/responses (one response object or SSE
// events) and /v1/responses/input_tokens. The body is read and the reply shaped by server/wire_responses
// (onto the chat pipeline).
#include <ctime>

#include "server/response.h"
#include "server/routes.h"
#include "server/wire_responses.h"

namespace bee::server {

namespace {

void handle_responses(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const TranslatedChatRequest rr = read_responses_request(ctx, parse_body(req));
    const std::string id = random_id("resp_");
    if (rr.stream) {
        stream_task(ctx, req, res, rr.task, responses_stream_format(ctx, rr.chat, id));
        return;
    }
    const int64_t created = (int64_t)time(nullptr);
    const TaskResult r = run_task(ctx, req, rr.task);
    const chat::ToolCallDelta d = split_tool_calls(rr.chat.tools, r.content);
    send_json(res, responses_object(id, created, ctx.model_name, responses_output_items(r.reasoning, d), &r.finish));
}

void handle_input_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    send_json(res, {{"object", "response.input_tokens"},
                    {"input_tokens", (int64_t)read_responses_input_tokens(ctx, parse_body(req)).size()}});
}

}  // namespace

void register_responses_routes(RouteTable& svr, ServerContext& ctx) {
    auto h = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_responses(ctx, q, r); });
    auto t = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_input_tokens(ctx, q, r); });
    svr.Post("/v1/responses", h);
    svr.Post("/responses", h);
    svr.Post("/v1/responses/input_tokens", t);
    svr.Post("/responses/input_tokens", t);
}

}  // namespace bee::server
