// server/routes_completions: the native /completion endpoint and OpenAI text completions. The bodies are
// read and the replies shaped by server/wire_native and server/wire_openai.
#include <ctime>
#include <functional>

#include "server/response.h"
#include "server/routes.h"
#include "server/wire_native.h"
#include "server/wire_openai.h"

namespace bee::server {

// Native /completion. With several prompts or n > 1 (n_cmpl) the body is an array of results, prompt by
// prompt (stream: chunks carry their "index"), as llama-server does for several completions.
void complete_native(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                     const CompletionRequest& cr) {
    const auto& tasks = cr.tasks;
    if (!cr.stream) {
        std::vector<TaskResult> rs = run_tasks(ctx, req, tasks);
        if (tasks.size() == 1) return send_json(res, native_completion_json(ctx, *tasks[0], rs[0], false, 0));
        Json all = Json::array();
        for (size_t i = 0; i < rs.size(); i++) all.push_back(native_completion_json(ctx, *tasks[i], rs[i], false, i));
        send_json(res, all);
        return;
    }
    std::vector<StreamFormat> fmts;
    for (size_t i = 0; i < tasks.size(); i++) fmts.push_back(native_stream_format(ctx, tasks[i], i));
    stream_tasks(ctx, req, res, tasks, std::move(fmts));
}

namespace {

void handle_oai(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const CompletionRequest cr = read_oai_completion_request(ctx, parse_body(req));
    const int total = (int)cr.tasks.size();  // choice i answers prompt i / n
    const std::string id = random_id("cmpl-");
    const int64_t created = (int64_t)time(nullptr);
    const bool want_logprobs = cr.gen.want_logprobs;
    if (!cr.stream) {
        send_json(res, oai_text_completion_json(ctx, id, created, run_tasks(ctx, req, cr.tasks), cr.n, want_logprobs,
                                                cr.verbose ? cr.tasks[0].get() : nullptr));
        return;
    }
    std::vector<StreamFormat> fmts;
    for (int i = 0; i < total; i++)
        fmts.push_back(oai_text_stream_format(ctx, id, created, want_logprobs, i, cr.include_usage && total == 1,
                                              cr.verbose ? cr.tasks[i] : nullptr));
    std::function<std::vector<Json>(const std::vector<FinishInfo>&)> after_all;
    if (cr.include_usage && total > 1)  // one usage chunk for all the choices
        after_all = usage_after_all(oai_text_chunk(ctx, id, created, Json::array()), (size_t)cr.n);
    stream_tasks(ctx, req, res, cr.tasks, std::move(fmts), std::move(after_all));
}

}  // namespace

void register_completion_routes(RouteTable& svr, ServerContext& ctx) {
    auto native = guarded([&ctx](const httplib::Request& q, httplib::Response& r) {
        complete_native(ctx, q, r, read_native_completion_request(ctx, parse_body(q)));
    });
    svr.Post("/completion", native);
    svr.Post("/completions", native);
    svr.Post("/v1/completions",
             guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_oai(ctx, q, r); }));
}

}  // namespace bee::server
