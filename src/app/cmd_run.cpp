// app/cmd_run: `bee run` — load a model and generate from a prompt on the runtime with one slot (the loop
// `bee serve` runs), print text (or one JSON object with --json) and tokens/s.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/args_spec.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "model/engine.h"
#include "runtime/local_run.h"
#include "sample/sampler.h"
#include "spec/stats.h"

namespace bee {

namespace {

struct RunOptions {
    ModelOptions model;
    SamplingParams sampling;
    std::string prompt, prompt_file;
    int32_t n_predict = -1;
    bool json = false;
    bool no_display_prompt = false;
    bool escape = false, ignore_eos = false, special = false;
    SpecOptions spec;
};

struct RunResult {
    std::vector<int32_t> prompt_tokens, tokens;
    std::string text;
    double prompt_ms = 0, predicted_ms = 0;
    std::shared_ptr<const SpecStats> spec_stats;  // null: no speculation
    std::string spec_policy;
};

// One task on the runtime with one slot, as `bee serve` runs a request.
RunResult generate(Engine& eng, const RunOptions& o, bool stream) {
    const Tokenizer& tok = eng.model().tokenizer();
    RunResult r;
    r.prompt_tokens = tok.encode(o.prompt, true, true);
    if (r.prompt_tokens.empty()) fail("the prompt is empty (give -p TEXT or -f FILE)");
    if ((int)r.prompt_tokens.size() >= eng.params().n_ctx)
        fail("the prompt has %zu tokens but the context holds %d (raise -c)", r.prompt_tokens.size(),
             eng.params().n_ctx);
    auto task = std::make_shared<runtime::Task>();
    task->id = 1;
    task->prompt = r.prompt_tokens;
    runtime::GenParams& g = task->params;
    g.sampling = with_vocab(o.sampling, eng.model());
    if (o.ignore_eos)  // as llama.cpp: every end-of-generation token gets a -inf logit bias
        for (int32_t id = 0; id < tok.n_vocab(); id++)
            if (tok.is_eog(id)) g.sampling.logit_bias.push_back({id, -INFINITY});
    g.n_predict = o.n_predict;
    g.special = o.special;
    g.cache_prompt = false;
    runtime::SchedulerParams sp;
    sp.n_parallel = 1;
    sp.n_batch = o.model.n_batch;
    sp.spec = o.spec.params;
    runtime::Scheduler sched(eng, sp);
    if (stream && !o.no_display_prompt) {
        fputs(o.prompt.c_str(), stdout);
        fflush(stdout);
    }
    runtime::LocalResult l = runtime::run_task(sched, task, [&](const runtime::TaskEvent& e) {
        if (stream && !e.content.empty()) {
            fputs(e.content.c_str(), stdout);
            fflush(stdout);
        }
    });
    if (stream) fputs("\n", stdout);
    r.text = std::move(l.content);
    r.tokens = std::move(l.tokens);
    r.prompt_ms = l.finish.prompt_ms;
    r.predicted_ms = l.finish.predicted_ms;
    r.spec_stats = l.finish.spec_stats;
    r.spec_policy = l.finish.spec_policy;
    return r;
}

// llama-server's timings.draft_n / draft_n_accepted, plus each drafter's counters.
void add_spec_json(nlohmann::json& j, const SpecStats& st, const std::string& policy) {
    j["timings"]["draft_n"] = st.draft_n();
    j["timings"]["draft_n_accepted"] = st.draft_n_accepted();
    nlohmann::json drafters = nlohmann::json::array();
    for (const DrafterStats& d : st.drafters) {
        nlohmann::json pos = nlohmann::json::array();
        for (int64_t a : d.acc_at_pos) pos.push_back(d.n_accept ? (double)a / (double)d.n_accept : 0.0);
        drafters.push_back({{"name", d.name},
                            {"n_draft_calls", d.n_draft},
                            {"gen_drafts", d.gen_drafts},
                            {"acc_drafts", d.acc_drafts},
                            {"gen_tokens", d.gen_tokens},
                            {"acc_tokens", d.acc_tokens},
                            {"mean_acc_len", d.mean_acc_len()},
                            {"acc_rate_per_pos", pos},
                            {"draft_ms", d.ms_draft}});
    }
    j["speculative"] = {{"policy", policy},
                        {"cycles", st.n_cycles},
                        {"tokens_per_cycle", st.n_cycles ? (double)st.n_tokens / (double)st.n_cycles : 0.0},
                        {"drafters", drafters}};
}

nlohmann::json timings_json(const RunResult& r) {
    const double pn = (double)r.prompt_tokens.size(), gn = (double)r.tokens.size();
    return {{"prompt_n", r.prompt_tokens.size()},
            {"prompt_ms", r.prompt_ms},
            {"prompt_per_token_ms", pn > 0 ? r.prompt_ms / pn : 0.0},
            {"prompt_per_second", r.prompt_ms > 0 ? pn * 1000.0 / r.prompt_ms : 0.0},
            {"predicted_n", r.tokens.size()},
            {"predicted_ms", r.predicted_ms},
            {"predicted_per_token_ms", gn > 0 ? r.predicted_ms / gn : 0.0},
            {"predicted_per_second", r.predicted_ms > 0 ? gn * 1000.0 / r.predicted_ms : 0.0}};
}

}  // namespace

int cmd_run(int argc, char** argv) {
    RunOptions o;
    ArgParser p("bee run", "Generate text from a prompt.");
    add_model_options(p, o.model);
    p.str("-p,--prompt", &o.prompt, "TEXT", "prompt text (special tokens like <|im_start|> are parsed)");
    p.str("-f,--file", &o.prompt_file, "FILE", "read the prompt from a file");
    p.i32("-n,--predict,--n-predict", &o.n_predict, "tokens to generate (-1: until end of generation) [-1]", -1,
          INT32_MAX);
    p.action("-e,--escape", "process escapes (\\n, \\t, ...) in the prompt", [&o] { o.escape = true; });
    p.action("--no-escape", "take the prompt as given (the default)", [&o] { o.escape = false; });
    p.flag("--ignore-eos", &o.ignore_eos, "generate past end-of-generation tokens (until -n)");
    p.flag("-sp,--special", &o.special, "print control tokens in the generated text");
    p.ignored("--keep", 1, "bee run stops when its context is full (no context shift)");
    add_sampling_options(p, o.sampling);
    add_spec_options(p, o.spec);
    p.flag("--json", &o.json, "print one JSON object {prompt_tokens, tokens, text, timings}");
    p.flag("--no-display-prompt", &o.no_display_prompt, "do not echo the prompt");
    try {
        if (!p.parse(argc, argv)) return 0;
        if (o.model.model.empty()) fail("no model given (use -m FILE)");
        if (!o.prompt_file.empty()) o.prompt = read_file(o.prompt_file);
        if (o.escape) o.prompt = unescape_arg(o.prompt);
        if (o.json) log_set_level(LogLevel::warn);
        std::unique_ptr<Model> model = load_model(o.model);
        BEE_LOG_INFO("model: %s", model->describe().c_str());
        EngineParams ep = engine_params(o.model);
        Engine eng(*model, ep);
        BEE_LOG_INFO("context %d, %d threads, KV %s/%s, %zu bytes per token, %.1f MiB", eng.params().n_ctx,
                     eng.params().n_threads, ggml_type_name(eng.params().type_k), ggml_type_name(eng.params().type_v),
                     eng.kv().bytes_per_token(), eng.kv().total_bytes() / 1048576.0);
        finish_spec_options(o.spec, eng.params().n_ctx, eng.params().n_threads);
        RunResult r = generate(eng, o, !o.json);
        if (o.json) {
            nlohmann::json j = {{"prompt_tokens", r.prompt_tokens},
                                {"tokens", r.tokens},
                                {"text", r.text},
                                {"timings", timings_json(r)}};
            if (r.spec_stats) add_spec_json(j, *r.spec_stats, r.spec_policy);
            printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        } else {
            nlohmann::json t = timings_json(r);
            fprintf(stderr, "\nprompt: %d tokens, %.1f ms, %.2f tokens/s\n", (int)r.prompt_tokens.size(), r.prompt_ms,
                    t["prompt_per_second"].get<double>());
            fprintf(stderr, "generation: %d tokens, %.1f ms, %.2f tokens/s\n", (int)r.tokens.size(), r.predicted_ms,
                    t["predicted_per_second"].get<double>());
            if (r.spec_stats) {
                const SpecStats& st = *r.spec_stats;
                for (const DrafterStats& d : st.drafters) fprintf(stderr, "%s\n", d.line().c_str());
                fprintf(stderr,
                        "draft acceptance rate = %.5f (%lld accepted / %lld generated), %.2f tokens per decode\n",
                        st.draft_n() ? (double)st.draft_n_accepted() / (double)st.draft_n() : 0.0,
                        (long long)st.draft_n_accepted(), (long long)st.draft_n(),
                        st.n_cycles ? (double)st.n_tokens / (double)st.n_cycles : 0.0);
            }
        }
        return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace bee
