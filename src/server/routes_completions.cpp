// server/routes_completions: the native /completion endpoint and OpenAI text completions.
#include <algorithm>
#include <ctime>
#include <functional>

#include "server/request.h"
#include "server/response.h"
#include "server/routes.h"

namespace bee::server {

namespace {

Json generation_settings(const ServerContext& ctx, const GenParams& g) {
    Json j = sampling_json(g.sampling);
    j.update(Json{{"n_predict", g.n_predict},
                  {"stop", g.stop},
                  {"ignore_eos", g.ignore_eos},
                  {"n_keep", g.n_keep},
                  {"n_probs", g.n_probs},
                  {"cache_prompt", g.cache_prompt},
                  {"lora", lora_scales_json(g.lora)},
                  {"n_ctx", ctx.scheduler->n_ctx_slot()},
                  {"model", ctx.model_name}});
    return j;
}

// The final object of /completion (non-stream body, or last stream chunk).
Json native_final(const ServerContext& ctx, const Task& t, const TaskResult& r, bool stream, size_t index) {
    const FinishInfo& f = r.finish;
    Json j = {{"index", index},
              {"content", stream ? std::string() : r.content},
              {"id_slot", f.id_slot},
              {"stop", true},
              {"model", ctx.model_name},
              {"tokens_predicted", f.n_predicted},
              {"tokens_evaluated", f.n_prompt},
              {"generation_settings", generation_settings(ctx, t.params)},
              {"prompt", ctx.tokenizer().decode(t.prompt, true)},
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
    if (!f.stop_message.empty()) j["stop_message"] = f.stop_message;
    return j;
}

// llama-server's response_fields: only the listed paths of the result ("generation_settings/n_predict"),
// each under its path as the key; paths that do not exist are left out.
Json only_fields(Json j, const std::vector<std::string>& paths) {
    if (paths.empty()) return j;
    Json out = Json::object();
    for (const std::string& path : paths) {
        const Json* cur = &j;
        for (size_t at = 0; cur && at <= path.size();) {
            const size_t end = std::min(path.find('/', at), path.size());
            const std::string key = path.substr(at, end - at);
            cur = cur->is_object() && cur->contains(key) ? &(*cur)[key] : nullptr;
            at = end + 1;
        }
        if (cur) out[path] = *cur;
    }
    return out;
}

void handle_native(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    if (!body.contains("prompt")) bad_request("'prompt' is required");
    complete_native(ctx, req, res, body, tokenize_prompts(body["prompt"], ctx.tokenizer()));
}

}  // namespace

// The tasks of several prompts, n choices each, prompt by prompt.
static std::vector<std::shared_ptr<Task>> tasks_for(ServerContext& ctx,
                                                    const std::vector<std::vector<int32_t>>& prompts,
                                                    const GenParams& g, int32_t n) {
    std::vector<std::shared_ptr<Task>> tasks;
    for (const std::vector<int32_t>& p : prompts)
        for (auto& t : make_tasks(ctx, p, g, n)) tasks.push_back(std::move(t));
    return tasks;
}

// Native /completion. With several prompts or n > 1 (n_cmpl) the body is an array of results, prompt by
// prompt (stream: chunks carry their "index"), as llama-server does for several completions.
void complete_native(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, const Json& body,
                     const std::vector<std::vector<int32_t>>& prompts) {
    const int32_t n = parse_n_choices(body);
    GenParams g = parse_gen_params(body, ctx, Api::native);
    auto tasks = tasks_for(ctx, prompts, g, n);
    if (!get_bool(body, "stream", false)) {
        std::vector<TaskResult> rs = run_tasks(ctx, req, tasks);
        const auto result = [&](size_t i) {
            return only_fields(native_final(ctx, *tasks[i], rs[i], false, i), g.response_fields);
        };
        if (tasks.size() == 1) return send_json(res, result(0));
        Json all = Json::array();
        for (size_t i = 0; i < rs.size(); i++) all.push_back(result(i));
        send_json(res, all);
        return;
    }
    // Native stream: {content, tokens, stop:false} chunks, then the full object; no [DONE].
    std::vector<StreamFormat> fmts;
    for (size_t i = 0; i < tasks.size(); i++) {
        auto text = std::make_shared<std::string>();
        auto task = tasks[i];
        StreamFormat fmt;
        fmt.done_sentinel = false;
        fmt.delta = [&ctx, task, text, i](const TaskEvent& e) {
            Json ids = Json::array();
            for (const TokenInfo& ti : e.tokens) ids.push_back(ti.id);
            *text += e.content;
            Json j = {{"index", i}, {"content", e.content}, {"tokens", ids}, {"stop", false}, {"id_slot", -1}};
            if (task->params.want_logprobs) j["completion_probabilities"] = native_probs(e.tokens, ctx.tokenizer());
            return std::vector<Json>{j};
        };
        fmt.progress = [i](const TaskEvent& e) {
            return Json{{"index", i},    {"content", ""}, {"tokens", Json::array()},
                        {"stop", false}, {"id_slot", -1}, {"prompt_progress", progress_json(e)}};
        };
        fmt.done = [&ctx, task, text, i](const FinishInfo& f) {
            TaskResult r;
            r.content = *text;
            r.finish = f;
            return std::vector<Json>{native_final(ctx, *task, r, true, i)};
        };
        fmts.push_back(std::move(fmt));
    }
    stream_tasks(ctx, res, std::move(tasks), std::move(fmts));
}

namespace {

Json oai_text_logprobs(const ServerContext& ctx, const std::vector<TokenInfo>& toks) {
    Json tokens = Json::array(), lps = Json::array(), tops = Json::array();
    for (const TokenInfo& t : toks) {
        tokens.push_back(ctx.tokenizer().token_to_piece(t.id, false));
        lps.push_back(t.logprob);
        Json top = Json::object();
        for (const TokenLogprob& p : t.top) top[ctx.tokenizer().token_to_piece(p.id, false)] = p.logprob;
        tops.push_back(top);
    }
    return Json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}};
}

Json oai_text_chunk(const ServerContext& ctx, const std::string& id, int64_t created, Json choice) {
    Json choices = choice.is_array() ? std::move(choice) : Json::array({std::move(choice)});
    return Json{{"id", id},
                {"object", "text_completion"},
                {"created", created},
                {"model", ctx.model_name},
                {"system_fingerprint", "bee"},
                {"choices", std::move(choices)}};
}

void handle_oai(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    if (!body.contains("prompt")) bad_request("'prompt' is required");
    const int32_t n = parse_n_choices(body);
    GenParams g = parse_gen_params(body, ctx, Api::oai_completion);
    auto tasks = tasks_for(ctx, tokenize_prompts(body["prompt"], ctx.tokenizer()), g, n);
    const int total = (int)tasks.size();  // choice i answers prompt i / n
    const std::string id = random_id("cmpl-");
    const int64_t created = (int64_t)time(nullptr);
    const bool want_logprobs = g.want_logprobs;
    if (!get_bool(body, "stream", false)) {
        std::vector<TaskResult> rs = run_tasks(ctx, req, tasks);
        Json choices = Json::array();
        std::vector<FinishInfo> fs;
        for (size_t i = 0; i < rs.size(); i++) {
            Json choice = {{"text", rs[i].content},
                           {"index", i},
                           {"logprobs", nullptr},
                           {"finish_reason", finish_reason(rs[i].finish)}};
            if (want_logprobs) choice["logprobs"] = oai_text_logprobs(ctx, rs[i].tokens);
            add_stop_detail(choice, rs[i].finish);
            choices.push_back(std::move(choice));
            fs.push_back(rs[i].finish);
        }
        const FinishInfo f = merge_finish(fs, (size_t)n);
        Json j = oai_text_chunk(ctx, id, created, std::move(choices));
        j["usage"] = usage_json(f);
        j["timings"] = timings_json(f);
        send_json(res, j);
        return;
    }
    const bool include_usage = body.contains("stream_options") && body["stream_options"].is_object() &&
                               get_bool(body["stream_options"], "include_usage", false);
    std::vector<StreamFormat> fmts;
    for (int i = 0; i < total; i++) {
        StreamFormat fmt;
        fmt.delta = [&ctx, want_logprobs, id, created, i](const TaskEvent& e) {
            Json choice = {{"text", e.content}, {"index", i}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
            if (want_logprobs) choice["logprobs"] = oai_text_logprobs(ctx, e.tokens);
            return std::vector<Json>{oai_text_chunk(ctx, id, created, choice)};
        };
        fmt.progress = [&ctx, id, created](const TaskEvent& e) {
            Json j = oai_text_chunk(ctx, id, created, Json::array());
            j["prompt_progress"] = progress_json(e);
            return j;
        };
        const bool usage_here = include_usage && total == 1;
        fmt.done = [&ctx, id, created, usage_here, i](const FinishInfo& f) {
            Json choice = {{"text", ""}, {"index", i}, {"logprobs", nullptr}, {"finish_reason", finish_reason(f)}};
            add_stop_detail(choice, f);
            Json last = oai_text_chunk(ctx, id, created, std::move(choice));
            return oai_final_chunks(std::move(last), oai_text_chunk(ctx, id, created, Json::array()), f, usage_here);
        };
        fmts.push_back(std::move(fmt));
    }
    std::function<std::vector<Json>(const std::vector<FinishInfo>&)> after_all;
    if (include_usage && total > 1)  // one usage chunk for all the choices
        after_all = usage_after_all(oai_text_chunk(ctx, id, created, Json::array()), (size_t)n);
    stream_tasks(ctx, res, std::move(tasks), std::move(fmts), std::move(after_all));
}

}  // namespace

void register_completion_routes(httplib::Server& svr, ServerContext& ctx) {
    auto native = guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_native(ctx, q, r); });
    svr.Post("/completion", native);
    svr.Post("/completions", native);
    svr.Post("/v1/completions",
             guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_oai(ctx, q, r); }));
}

}  // namespace bee::server
