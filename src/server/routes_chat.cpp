// server/routes_chat: OpenAI chat completions — messages rendered with the chat template, reasoning
// split into reasoning_content, SSE chunks as the OpenAI client expects them.
#include <ctime>

#include "base/error.h"
#include "chat/reasoning.h"
#include "server/chat_prompt.h"
#include "server/request.h"
#include "server/response.h"
#include "server/routes.h"

namespace bee::server {

namespace {

Json chat_chunk(const ServerContext& ctx, const std::string& id, int64_t created, Json choices) {
    return Json{{"id", id},
                {"object", "chat.completion.chunk"},
                {"created", created},
                {"model", ctx.model_name},
                {"system_fingerprint", "bee"},
                {"choices", std::move(choices)}};
}

void handle_chat(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    ChatPrompt cp = render_chat_prompt(ctx, body);
    GenParams g = parse_gen_params(body, ctx, Api::oai_chat);
    const bool legacy = cp.format == ReasoningFormat::deepseek_legacy;
    g.reasoning = cp.reasoning && !legacy;
    g.starts_in_reasoning = cp.starts_in_reasoning;
    if (!cp.reasoning) g.loop_guard.mode = chat::LoopGuardMode::Off;
    auto task = make_task(ctx, ctx.tokenizer().encode(cp.text, true, true), std::move(g));
    const std::string id = random_id("chatcmpl-");
    const int64_t created = (int64_t)time(nullptr);

    if (!get_bool(body, "stream", false)) {
        TaskResult r = run_task(ctx, req, task);
        Json msg = {{"role", "assistant"}, {"content", r.content}};
        if (legacy) {  // keep the tags inline and also report the reasoning separately
            chat::ReasoningParser p("<think>", "</think>", cp.starts_in_reasoning);
            chat::ReasoningDelta a = p.feed(r.content), b = p.flush();
            if (!(a.reasoning + b.reasoning).empty()) msg["reasoning_content"] = a.reasoning + b.reasoning;
        } else if (!r.reasoning.empty()) {
            msg["reasoning_content"] = r.reasoning;
        }
        Json choice = {{"index", 0}, {"finish_reason", finish_reason(r.finish)}, {"message", msg}};
        if (task->params.want_logprobs) choice["logprobs"] = {{"content", oai_logprobs_content(r.tokens, ctx.tokenizer())}};
        Json j = {{"id", id},
                  {"object", "chat.completion"},
                  {"created", created},
                  {"model", ctx.model_name},
                  {"system_fingerprint", "bee"},
                  {"choices", Json::array({choice})},
                  {"usage", usage_json(r.finish)},
                  {"timings", timings_json(r.finish)}};
        if (!r.finish.loop_guard_action.empty())
            j["loop_guard"] = {{"triggered", true}, {"action", r.finish.loop_guard_action}, {"reason", r.finish.loop_guard_reason}};
        send_json(res, j);
        return;
    }
    const bool include_usage = body.contains("stream_options") && body["stream_options"].is_object() &&
                               get_bool(body["stream_options"], "include_usage", false);
    StreamFormat fmt;
    fmt.start = [&ctx, id, created] {
        Json delta = {{"role", "assistant"}, {"content", nullptr}};
        return std::vector<Json>{chat_chunk(ctx, id, created, Json::array({{{"index", 0}, {"finish_reason", nullptr}, {"delta", delta}}}))};
    };
    fmt.delta = [&ctx, task, id, created](const TaskEvent& e) {
        std::vector<Json> out;
        Json choice = {{"index", 0}, {"finish_reason", nullptr}, {"delta", Json::object()}};
        if (!e.reasoning.empty()) choice["delta"]["reasoning_content"] = e.reasoning;
        if (!e.content.empty()) choice["delta"]["content"] = e.content;
        const bool has_probs = task->params.want_logprobs && !e.tokens.empty();
        if (choice["delta"].empty() && !has_probs) return out;
        if (has_probs) choice["logprobs"] = {{"content", oai_logprobs_content(e.tokens, ctx.tokenizer())}};
        out.push_back(chat_chunk(ctx, id, created, Json::array({choice})));
        return out;
    };
    fmt.done = [&ctx, id, created, include_usage](const FinishInfo& f) {
        Json last = chat_chunk(ctx, id, created,
                               Json::array({{{"index", 0}, {"finish_reason", finish_reason(f)}, {"delta", Json::object()}}}));
        return oai_final_chunks(std::move(last), chat_chunk(ctx, id, created, Json::array()), f, include_usage);
    };
    stream_task(ctx, res, task, std::move(fmt));
}

}  // namespace

void register_chat_routes(httplib::Server& svr, ServerContext& ctx) {
    auto h = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_chat(ctx, q, r); });
    svr.Post("/v1/chat/completions", h);
    svr.Post("/chat/completions", h);
}

}  // namespace bee::server
