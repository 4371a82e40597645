// server/routes_chat: OpenAI chat completions — messages rendered with the chat template, reasoning
// split into reasoning_content, tool calls parsed into message.tool_calls (chat/tool_calls, in the
// format the template teaches), SSE chunks as the OpenAI client expects them; /chat/completions/input_tokens
// counts the prompt. The body is read and the reply shaped by server/wire_openai.
#include <ctime>
#include <functional>

#include "server/response.h"
#include "server/routes.h"
#include "server/wire_openai.h"

namespace bee::server {

namespace {

void handle_chat(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const ChatCompletionRequest cr = read_chat_completion_request(ctx, parse_body(req));
    const std::string id = random_id("chatcmpl-");
    const int64_t created = (int64_t)time(nullptr);
    if (!cr.stream) {
        send_json(res, chat_completion_json(ctx, id, created, cr.chat, run_tasks(ctx, req, cr.tasks),
                                            cr.verbose ? cr.tasks[0].get() : nullptr));
        return;
    }
    std::vector<StreamFormat> fmts;
    for (int i = 0; i < cr.n; i++)
        fmts.push_back(chat_stream_format(ctx, id, created, cr.chat.tools, cr.chat.gen.want_logprobs, i,
                                          cr.include_usage && cr.n == 1, cr.verbose ? cr.tasks[i] : nullptr));
    std::function<std::vector<Json>(const std::vector<FinishInfo>&)> after_all;
    if (cr.include_usage && cr.n > 1)  // one usage chunk for all the choices
        after_all = usage_after_all(chat_chunk(ctx, id, created, Json::array()));
    stream_tasks(ctx, req, res, cr.tasks, std::move(fmts), std::move(after_all));
}

// The prompt's token count, as /v1/chat/completions would run it (template, tools); llama-server's shape.
void handle_input_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    send_json(res, {{"input_tokens", (int64_t)read_chat_input_tokens_request(ctx, parse_body(req)).size()},
                    {"object", "response.input_tokens"}});
}

}  // namespace

void register_chat_routes(RouteTable& svr, ServerContext& ctx) {
    auto h = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_chat(ctx, q, r); });
    auto t = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_input_tokens(ctx, q, r); });
    svr.Post("/v1/chat/completions", h);
    svr.Post("/chat/completions", h);
    svr.Post("/v1/chat/completions/input_tokens", t);
    svr.Post("/chat/completions/input_tokens", t);
}

}  // namespace bee::server
