// app/cmd_run: `bee run` — load a model, prefill a prompt, generate with the sampler chain, print
// text (or one JSON object with --json) and tokens/s.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "base/log.h"
#include "base/timer.h"
#include "model/engine.h"
#include "sample/sampler.h"

namespace bee {

namespace {

struct RunOptions {
    ModelOptions model;
    SamplingParams sampling;
    std::string prompt, prompt_file;
    int32_t n_predict = -1;
    bool json = false;
    bool no_display_prompt = false;
};

struct RunResult {
    std::vector<int32_t> prompt_tokens, tokens;
    std::string text;
    double prompt_ms = 0, predicted_ms = 0;
};

// Prefills the prompt in chunks of n_batch; returns the logits of its last token.
std::vector<float> prefill(Engine& eng, const std::vector<int32_t>& toks, int n_batch) {
    Batch b;
    DecodeOutput out;
    for (size_t i = 0; i < toks.size(); i += n_batch) {
        b.clear();
        const size_t end = std::min(toks.size(), i + (size_t)n_batch);
        for (size_t j = i; j < end; j++) b.add(toks[j], (int32_t)j, 0, j + 1 == toks.size());
        eng.decode(b, out);
    }
    return std::vector<float>(out.logits_at(0), out.logits_at(0) + out.n_vocab);
}

RunResult generate(Engine& eng, const RunOptions& o, bool stream) {
    const Tokenizer& tok = eng.model().tokenizer();
    RunResult r;
    r.prompt_tokens = tok.encode(o.prompt, true, true);
    const int n_ctx = eng.params().n_ctx;
    if (r.prompt_tokens.empty()) fail("the prompt is empty (give -p TEXT or -f FILE)");
    if ((int)r.prompt_tokens.size() >= n_ctx)
        fail("the prompt has %zu tokens but the context holds %d (raise -c)", r.prompt_tokens.size(), n_ctx);
    Sampler sampler(o.sampling, eng.model().hparams().n_vocab);
    for (int32_t t : r.prompt_tokens) sampler.accept(t);
    if (stream && !o.no_display_prompt) {
        fputs(o.prompt.c_str(), stdout);
        fflush(stdout);
    }
    double t0 = time_ms();
    std::vector<float> logits = prefill(eng, r.prompt_tokens, o.model.n_batch);
    r.prompt_ms = time_ms() - t0;

    StreamDecoder dec(tok);
    t0 = time_ms();
    Batch b;
    DecodeOutput out;
    int32_t pos = (int32_t)r.prompt_tokens.size();
    const float* cur = logits.data();
    while (o.n_predict < 0 || (int)r.tokens.size() < o.n_predict) {
        const int32_t id = sampler.sample(cur);
        sampler.accept(id);
        if (tok.is_eog(id)) break;
        r.tokens.push_back(id);
        std::string piece = dec.push(id);
        r.text += piece;
        if (stream) {
            fputs(piece.c_str(), stdout);
            fflush(stdout);
        }
        if (pos >= n_ctx) break;  // context full
        if (o.n_predict >= 0 && (int)r.tokens.size() >= o.n_predict) break;
        b.clear();
        b.add(id, pos++, 0, true);
        eng.decode(b, out);
        cur = out.logits_at(0);
    }
    std::string rest = dec.flush();
    r.text += rest;
    if (stream) {
        fputs(rest.c_str(), stdout);
        fputs("\n", stdout);
    }
    r.predicted_ms = time_ms() - t0;
    return r;
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
    p.i32("-n,--n-predict", &o.n_predict, "tokens to generate (-1: until end of generation) [-1]", -1, INT32_MAX);
    add_sampling_options(p, o.sampling);
    p.flag("--json", &o.json, "print one JSON object {prompt_tokens, tokens, text, timings}");
    p.flag("--no-display-prompt", &o.no_display_prompt, "do not echo the prompt");
    try {
        if (!p.parse(argc, argv)) return 0;
        if (o.model.model.empty()) fail("no model given (use -m FILE)");
        if (!o.prompt_file.empty()) o.prompt = read_file(o.prompt_file);
        if (o.json) log_set_level(LogLevel::warn);
        std::unique_ptr<Model> model = Model::load(o.model.model);
        BEE_LOG_INFO("model: %s", model->describe().c_str());
        EngineParams ep;
        ep.n_ctx = o.model.n_ctx;
        ep.n_ubatch = std::min(o.model.n_ubatch, o.model.n_batch);
        ep.n_threads = o.model.n_threads;
        ep.type_k = o.model.type_k;
        ep.type_v = o.model.type_v;
        Engine eng(*model, ep);
        BEE_LOG_INFO("context %d, %d threads, KV %s/%s, %.1f MiB", eng.params().n_ctx, eng.params().n_threads,
                     ggml_type_name(ep.type_k), ggml_type_name(ep.type_v), eng.kv().total_bytes() / 1048576.0);
        RunResult r = generate(eng, o, !o.json);
        if (o.json) {
            nlohmann::json j = {{"prompt_tokens", r.prompt_tokens},
                                {"tokens", r.tokens},
                                {"text", r.text},
                                {"timings", timings_json(r)}};
            printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        } else {
            nlohmann::json t = timings_json(r);
            fprintf(stderr, "\nprompt: %d tokens, %.1f ms, %.2f tokens/s\n", (int)r.prompt_tokens.size(),
                    r.prompt_ms, t["prompt_per_second"].get<double>());
            fprintf(stderr, "generation: %d tokens, %.1f ms, %.2f tokens/s\n", (int)r.tokens.size(), r.predicted_ms,
                    t["predicted_per_second"].get<double>());
        }
        return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace bee
