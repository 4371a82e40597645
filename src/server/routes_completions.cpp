// server/routes_completions: the native /completion endpoint and OpenAI text completions.
#include <algorithm>
#include <ctime>

#include "server/request.h"
#include "server/response.h"
#include "server/routes.h"

namespace bee::server {

namespace {

Json generation_settings(const ServerContext& ctx, const GenParams& g) {
    const SamplingParams& s = g.sampling;
    return Json{{"n_predict", g.n_predict},     {"seed", s.seed},
                {"temperature", s.temp},        {"top_k", s.top_k},
                {"top_p", s.top_p},             {"min_p", s.min_p},
                {"repeat_penalty", s.repeat_penalty}, {"repeat_last_n", s.repeat_last_n},
                {"presence_penalty", s.presence_penalty}, {"frequency_penalty", s.frequency_penalty},
                {"stop", g.stop},               {"ignore_eos", g.ignore_eos},
                {"n_probs", g.n_probs},         {"cache_prompt", g.cache_prompt},
                {"n_ctx", ctx.scheduler->n_ctx_slot()}, {"model", ctx.model_name}};
}

// The final object of /completion (non-stream body, or last stream chunk).
Json native_final(const ServerContext& ctx, const Task& t, const TaskResult& r, bool stream) {
    const FinishInfo& f = r.finish;
    Json j = {{"index", 0},
              {"content", stream ? std::string() : r.content},
              {"id_slot", f.id_slot},
              {"stop", true},
              {"model", ctx.model_name},
              {"tokens_predicted", f.n_predicted},
              {"tokens_evaluated", f.n_prompt},
              {"generation_settings", generation_settings(ctx, t.params)},
              {"has_new_line", r.content.find('\n') != std::string::npos},
              {"truncated", f.truncated},
              {"stop_type", stop_type_name(f.stop_type)},
              {"stopping_word", f.stopping_word},
              {"tokens_cached", f.n_prompt + std::max(0, f.n_predicted - 1)},  // tokens in the slot's KV
              {"timings", timings_json(f)}};
    if (!stream) {
        Json ids = Json::array();
        for (const TokenInfo& ti : r.tokens) ids.push_back(ti.id);
        j["tokens"] = ids;
        if (t.params.want_logprobs) j["completion_probabilities"] = native_probs(r.tokens, ctx.tokenizer());
    }
    if (!f.stop_detail.empty()) j["stop_detail"] = f.stop_detail;
    return j;
}

void handle_native(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    if (!body.contains("prompt")) bad_request("'prompt' is required");
    GenParams g = parse_gen_params(body, ctx, Api::native);
    auto task = make_task(ctx, tokenize_prompt(body["prompt"], ctx.tokenizer()), std::move(g));
    if (!get_bool(body, "stream", false)) {
        TaskResult r = run_task(ctx, req, task);
        send_json(res, native_final(ctx, *task, r, false));
        return;
    }
    // Native stream: {content, tokens, stop:false} chunks, then the full object; no [DONE].
    auto text = std::make_shared<std::string>();
    StreamFormat fmt;
    fmt.done_sentinel = false;
    fmt.delta = [&ctx, task, text](const TaskEvent& e) {
        Json ids = Json::array();
        for (const TokenInfo& ti : e.tokens) ids.push_back(ti.id);
        *text += e.content;
        Json j = {{"index", 0}, {"content", e.content}, {"tokens", ids}, {"stop", false}, {"id_slot", -1}};
        if (task->params.want_logprobs) j["completion_probabilities"] = native_probs(e.tokens, ctx.tokenizer());
        return std::vector<Json>{j};
    };
    fmt.done = [&ctx, task, text](const FinishInfo& f) {
        TaskResult r;
        r.content = *text;
        r.finish = f;
        return std::vector<Json>{native_final(ctx, *task, r, true)};
    };
    stream_task(ctx, res, task, std::move(fmt));
}

Json oai_text_logprobs(const ServerContext& ctx, const std::vector<TokenInfo>& toks) {
    Json tokens = Json::array(), lps = Json::array(), tops = Json::array();
    for (const TokenInfo& t : toks) {
        tokens.push_back(ctx.tokenizer().token_to_piece(t.id, false));
        lps.push_back(t.logprob);
        Json top = Json::object();
        for (const TokenProb& p : t.top) top[ctx.tokenizer().token_to_piece(p.id, false)] = p.logprob;
        tops.push_back(top);
    }
    return Json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}};
}

Json oai_text_chunk(const ServerContext& ctx, const std::string& id, int64_t created, Json choice) {
    return Json{{"id", id},           {"object", "text_completion"}, {"created", created},
                {"model", ctx.model_name}, {"system_fingerprint", "bee"},   {"choices", Json::array({choice})}};
}

void handle_oai(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    if (!body.contains("prompt")) bad_request("'prompt' is required");
    GenParams g = parse_gen_params(body, ctx, Api::oai_completion);
    auto task = make_task(ctx, tokenize_prompt(body["prompt"], ctx.tokenizer()), std::move(g));
    const std::string id = random_id("cmpl-");
    const int64_t created = (int64_t)time(nullptr);
    if (!get_bool(body, "stream", false)) {
        TaskResult r = run_task(ctx, req, task);
        Json choice = {{"text", r.content}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason(r.finish)}};
        if (task->params.want_logprobs) choice["logprobs"] = oai_text_logprobs(ctx, r.tokens);
        Json j = oai_text_chunk(ctx, id, created, choice);
        j["usage"] = usage_json(r.finish);
        j["timings"] = timings_json(r.finish);
        send_json(res, j);
        return;
    }
    const bool include_usage = body.contains("stream_options") && body["stream_options"].is_object() &&
                               get_bool(body["stream_options"], "include_usage", false);
    StreamFormat fmt;
    fmt.delta = [&ctx, task, id, created](const TaskEvent& e) {
        Json choice = {{"text", e.content}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
        if (task->params.want_logprobs) choice["logprobs"] = oai_text_logprobs(ctx, e.tokens);
        return std::vector<Json>{oai_text_chunk(ctx, id, created, choice)};
    };
    fmt.done = [&ctx, id, created, include_usage](const FinishInfo& f) {
        Json last = oai_text_chunk(ctx, id, created,
                                   {{"text", ""}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason(f)}});
        Json usage_chunk = oai_text_chunk(ctx, id, created, nullptr);
        usage_chunk["choices"] = Json::array();
        return oai_final_chunks(std::move(last), std::move(usage_chunk), f, include_usage);
    };
    stream_task(ctx, res, task, std::move(fmt));
}

}  // namespace

void register_completion_routes(httplib::Server& svr, ServerContext& ctx) {
    auto native = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_native(ctx, q, r); });
    svr.Post("/completion", native);
    svr.Post("/completions", native);
    svr.Post("/v1/completions", guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_oai(ctx, q, r); }));
}

}  // namespace bee::server
