// app/bench_spec: `bee bench spec` — runs a prompt set (bench/prompts/*.jsonl) with no speculation and
// with each --spec-type configuration, alternating configurations within every repetition (the machine
// is noisy), and prints per configuration: median generation tokens/s, speed-up over none, tokens per
// target decode, mean acceptance length (counting the bonus token), acceptance per draft position, and
// whether the tokens equal the ones without speculation (they must, at temperature 0); also the speed-up
// in CPU time (a proxy when other processes share the cores), draft rows per decode and the drafters'
// own time. --per-prompt adds each prompt's tokens per decode and how much of its output the prompt
// already holds (n-gram overlap); --cost-curve K measures the verify cost of 1 + k rows first
// (bench_spec_cost.h).
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/args_spec.h"
#include "app/bench_spec.h"
#include "app/bench_spec_cost.h"
#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "runtime/local_run.h"
#include "spec/registry.h"

namespace bee {

namespace {

struct BenchSpecOptions {
    ModelOptions model;
    SamplingParams sampling;
    SpecOptions spec;
    std::string prompts = "bench/prompts/grounded.jsonl";
    std::string types;  // configurations separated by ';' ("" = none + every model-free type)
    int32_t n_predict = 128;
    bool ignore_eos = false;
    int32_t reps = 1;
    std::string output = "md";
    bool per_prompt = false;
    bool keep_spec = false;
    int32_t cost_curve = -1;  // --cost-curve K: measure decodes of 1..K+1 rows first (-1: off)
    int32_t cost_reps = 9;
};

struct ConfigResult {
    std::string name;
    std::vector<double> tps;      // per repetition: generated tokens / generation seconds over the set
    std::vector<double> cpu_tps;  // the same per CPU second of the process (a proxy under load)
    int64_t tokens = 0, decodes = 0;
    SpecStats stats;
    bool same_as_none = true;
    std::vector<std::vector<int32_t>> outputs;  // per prompt (first repetition)
    std::vector<int> decodes_per_prompt;        // target decodes per prompt (first repetition)
};

// Fraction of the output's tokens that end an n-gram (over prompt + output) which also occurs in the
// prompt: how much of the answer a copying drafter could find in the prompt at key length n.
double prompt_overlap(const std::vector<int32_t>& prompt, const std::vector<int32_t>& output, int n) {
    if (output.empty() || (int)prompt.size() < n) return 0;
    const auto key = [n](const int32_t* t) {
        uint64_t h = 1469598103934665603ull;
        for (int i = 0; i < n; i++) h = (h ^ (uint32_t)t[i]) * 1099511628211ull;
        return h;
    };
    std::unordered_set<uint64_t> grams;
    for (size_t i = 0; i + n <= prompt.size(); i++) grams.insert(key(&prompt[i]));
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), output.begin(), output.end());
    int hits = 0;
    for (size_t i = prompt.size(); i < all.size(); i++) hits += grams.count(key(&all[i + 1 - n])) ? 1 : 0;
    return (double)hits / (double)output.size();
}

// The user message wrapped in the model's chat turn tokens (by hand: the chat layer is separate).
std::string wrap_chat(const Tokenizer& tok, const std::string& user) {
    if (tok.find_token("<|im_start|>") >= 0) return "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
    if (tok.find_token("<start_of_turn>") >= 0)
        return "<start_of_turn>user\n" + user + "<end_of_turn>\n<start_of_turn>model\n";
    return user;
}

std::vector<std::string> load_prompts(const std::string& path) {
    std::stringstream ss(read_file(path));
    std::vector<std::string> out;
    std::string line;
    for (int n = 1; std::getline(ss, line); n++) {
        if (line.empty()) continue;
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("user") || !j["user"].is_string())
            fail("%s:%d: expected a JSON object with a string field \"user\"", path.c_str(), n);
        out.push_back(j["user"].get<std::string>());
    }
    if (out.empty()) fail("%s: no prompts", path.c_str());
    return out;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One configuration of --types: "TYPES" or "TYPES FLAG VALUE ..." — the speculative types, then spec flags
// of its own over the command line's (e.g. "dflash --spec-branch-budget 8", "draft-eagle3 -md HEAD.gguf"), so
// drafters of different files or shapes are compared side by side in one run.
SpecParams config_params(const std::string& config, const SpecOptions& raw, const SpecParams& finished, int n_ctx,
                         int n_threads) {
    std::vector<std::string> words;
    std::stringstream ss(config);
    for (std::string w; ss >> w;) words.push_back(w);
    SpecParams out = finished;
    if (words.size() > 1) {
        SpecOptions so = raw;
        ArgParser p("bee bench spec", "one configuration's own speculative-decoding flags");
        add_spec_options(p, so);
        std::vector<std::string> argv_s(words.begin() + 1, words.end());
        std::vector<char*> argv;
        for (std::string& a : argv_s) argv.push_back(a.data());
        try {
            p.parse((int)argv.size(), argv.data());
        } catch (const Error& e) {
            fail("--types configuration '%s': %s", config.c_str(), e.what());
        }
        so.type_given = true;
        so.params.types = parse_spec_types(words.empty() ? "none" : words[0]);
        finish_spec_options(so, n_ctx, n_threads);
        out = so.params;
    }
    out.types = parse_spec_types(words.empty() ? "none" : words[0]);
    out.auto_mtp = false;  // each configuration is exactly its types ("none": no speculation)
    return out;
}

// One pass of the whole prompt set with one configuration (`spec` null: no speculation), on the runtime
// with one slot. The scheduler, and with it the drafters' process-wide state (suffix's global tree,
// ngram-mod's table, the dynamic ngram cache), is new for every pass: a second pass over the same prompts
// would otherwise draft the answers it saw in the first and overstate the speed-up.
void run_config(Engine& eng, const BenchSpecOptions& o, const std::vector<std::vector<int32_t>>& prompts,
                const SpecParams* spec, ConfigResult& res, bool first_rep) {
    runtime::SchedulerParams sp;
    sp.n_parallel = 1;
    sp.n_batch = o.model.n_batch;
    if (spec) sp.spec = *spec;
    runtime::Scheduler sched(eng, sp);
    double ms = 0, cpu = 0;
    int64_t tokens = 0;
    std::shared_ptr<const SpecStats> kept;
    for (size_t i = 0; i < prompts.size(); i++) {
        double cpu_first = -1;  // at the first generated token: the prompt's CPU time is left out
        auto task = std::make_shared<runtime::Task>();
        task->id = i + 1;
        task->prompt = prompts[i];
        task->params.sampling = with_vocab(o.sampling, eng.model());
        task->params.n_predict = o.n_predict;
        task->params.ignore_eos = o.ignore_eos;
        task->params.cache_prompt = false;
        // --keep-spec: the slot keeps its Speculator (drafters and depth policy) across the prompts, as a
        // server slot does across requests; otherwise each prompt starts a fresh one, like a new `bee run`.
        task->params.spec.fresh = !o.keep_spec;
        runtime::LocalResult g = runtime::run_task(sched, task, [&cpu_first](const runtime::TaskEvent& e) {
            if (cpu_first < 0 && !e.tokens.empty()) cpu_first = process_cpu_ms();
        });
        ms += g.finish.predicted_ms;
        if (cpu_first >= 0) cpu += process_cpu_ms() - cpu_first;
        tokens += (int64_t)g.tokens.size();
        if (first_rep) {
            res.tokens += (int64_t)g.tokens.size();
            res.decodes += g.finish.n_decodes;
            res.decodes_per_prompt.push_back(g.finish.n_decodes);
            if (g.finish.spec_stats && !o.keep_spec) res.stats.merge(*g.finish.spec_stats);
            kept = g.finish.spec_stats;  // cumulative over the pass when the slot keeps its Speculator
            res.outputs.push_back(std::move(g.tokens));
        }
    }
    if (kept && o.keep_spec && first_rep) res.stats.merge(*kept);
    res.tps.push_back(ms > 0 ? (double)tokens * 1000.0 / ms : 0);
    res.cpu_tps.push_back(cpu > 0 ? (double)tokens * 1000.0 / cpu : 0);
}

void print_md(const std::vector<ConfigResult>& rs, const BenchSpecOptions& o, const std::string& model) {
    printf("model %s, prompts %s, n %d, reps %d, temp %.2f, depth policy %s\n\n", model.c_str(), o.prompts.c_str(),
           o.n_predict, o.reps, o.sampling.temp,
           o.spec.params.depth.adaptive ? o.spec.params.depth.controller.c_str() : "fixed");
    printf(
        "| spec type | t/s (median) | speed-up | CPU speed-up | tokens/decode | rows/decode | mean acc len | "
        "accepted/drafted | acc rate per position (1..8) | same tokens |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n");
    const double base = median(rs[0].tps), cpu_base = median(rs[0].cpu_tps);
    for (const ConfigResult& r : rs) {
        const int64_t gen = r.stats.draft_n(), acc = r.stats.draft_n_accepted();
        int64_t calls = 0;
        std::vector<int64_t> at(8, 0);
        for (const DrafterStats& d : r.stats.drafters) {
            calls += d.n_accept;
            for (size_t i = 0; i < at.size() && i < d.acc_at_pos.size(); i++) at[i] += d.acc_at_pos[i];
        }
        std::string pos;
        for (int64_t a : at) pos += strfmt("%.2f ", calls ? (double)a / (double)calls : 0.0);
        // rows/decode: 1 + draft rows verified per target decode — with the cost curve, what the tokens
        // per decode were bought with
        printf("| %s | %.2f | %.2fx | %.2fx | %.2f | %.2f | %.2f | %lld/%lld | %s| %s |\n", r.name.c_str(),
               median(r.tps), base > 0 ? median(r.tps) / base : 0.0, cpu_base > 0 ? median(r.cpu_tps) / cpu_base : 0.0,
               r.decodes ? (double)r.tokens / (double)r.decodes : 0.0,
               r.decodes ? 1.0 + (double)gen / (double)r.decodes : 0.0, calls ? 1.0 + (double)acc / (double)calls : 1.0,
               (long long)acc, (long long)gen, pos.c_str(), r.same_as_none ? "yes" : "NO");
    }
    // The drafters' own time (draft + observe/accept + begin) against the generation time of the first
    // pass: what speculation costs besides the wider verify batches.
    printf("\n");
    for (const ConfigResult& r : rs) {
        if (r.stats.drafters.empty() || r.tps.empty() || r.tps[0] <= 0) continue;
        double ms = 0;
        int64_t calls = 0;
        for (const DrafterStats& d : r.stats.drafters) {
            ms += d.ms_draft + d.ms_accept + d.ms_begin;
            calls += d.n_draft;
        }
        const double gen_ms = (double)r.tokens * 1000.0 / r.tps[0];
        printf("drafting overhead %s: %.3f ms in %lld draft calls, %.2f%% of generation time\n", r.name.c_str(), ms,
               (long long)calls, gen_ms > 0 ? 100.0 * ms / gen_ms : 0.0);
    }
}

// Per prompt: prompt and output length (without speculation), 2/4/8-gram overlap of the output with the
// prompt, and tokens per decode for every configuration.
void print_per_prompt(const std::vector<ConfigResult>& rs, const std::vector<std::vector<int32_t>>& prompts) {
    printf(
        "\nper prompt (tokens/decode per configuration; overlap = share of output tokens ending an n-gram "
        "found in the prompt)\n\n| # | prompt tok | output tok | overlap 2/4/8 |");
    for (const ConfigResult& r : rs) printf(" %s |", r.name.c_str());
    printf("\n| ---: | ---: | ---: | --- |");
    for (size_t c = 0; c < rs.size(); c++) printf(" ---: |");
    printf("\n");
    for (size_t i = 0; i < prompts.size(); i++) {
        const std::vector<int32_t>& out = rs[0].outputs[i];
        printf("| %zu | %zu | %zu | %.2f %.2f %.2f |", i + 1, prompts[i].size(), out.size(),
               prompt_overlap(prompts[i], out, 2), prompt_overlap(prompts[i], out, 4),
               prompt_overlap(prompts[i], out, 8));
        for (const ConfigResult& r : rs) {
            const int d = r.decodes_per_prompt[i];
            printf(" %.2f |", d ? (double)r.outputs[i].size() / d : 0.0);
        }
        printf("\n");
    }
}

void print_json(const std::vector<ConfigResult>& rs) {
    nlohmann::json arr = nlohmann::json::array();
    const double base = median(rs[0].tps);
    for (const ConfigResult& r : rs) {
        nlohmann::json drafters = nlohmann::json::array();
        for (const DrafterStats& d : r.stats.drafters)
            drafters.push_back({{"name", d.name},
                                {"gen_tokens", d.gen_tokens},
                                {"acc_tokens", d.acc_tokens},
                                {"mean_acc_len", d.mean_acc_len()},
                                {"acc_at_pos", d.acc_at_pos},
                                {"n_accept", d.n_accept},
                                {"n_draft", d.n_draft},
                                {"ms_draft", d.ms_draft},
                                {"ms_accept", d.ms_accept},
                                {"ms_begin", d.ms_begin}});
        arr.push_back({{"spec_type", r.name},
                       {"samples_ts", r.tps},
                       {"median_ts", median(r.tps)},
                       {"samples_cpu_ts", r.cpu_tps},
                       {"speedup", base > 0 ? median(r.tps) / base : 0.0},
                       {"tokens", r.tokens},
                       {"decodes", r.decodes},
                       {"draft_n", r.stats.draft_n()},
                       {"draft_n_accepted", r.stats.draft_n_accepted()},
                       {"same_tokens", r.same_as_none},
                       {"drafters", drafters},
                       {"outputs", r.outputs},
                       {"decodes_per_prompt", r.decodes_per_prompt}});
    }
    printf("%s\n", arr.dump(1).c_str());
}

}  // namespace

int cmd_bench_spec(int argc, char** argv) {
    BenchSpecOptions o;
    o.sampling.temp = 0.0f;
    ArgParser p("bee bench spec", "Speculative decoding speed-up and acceptance on a prompt set (greedy by default).");
    add_model_options(p, o.model);
    add_sampling_options(p, o.sampling);
    add_spec_options(p, o.spec);
    p.str("--prompts", &o.prompts, "FILE",
          "prompt set, JSON lines with a \"user\" field [bench/prompts/grounded.jsonl]");
    p.str("--types", &o.types, "LIST",
          "configurations separated by ';', each a --spec-type value, optionally followed by spec flags of "
          "its own (\"dflash --spec-branch-budget 8\", \"draft-eagle3 -md HEAD.gguf\") "
          "(default: every model-free type, plus draft or draft-eagle3 with -md); none is always run first");
    p.i32("-n,--n-predict", &o.n_predict, "tokens to generate per prompt [128]", 1, 1 << 20);
    p.flag("--ignore-eos", &o.ignore_eos, "keep generating after end-of-generation tokens (every run is -n long)");
    p.i32("-r,--repetitions", &o.reps, "passes over the set (configurations alternate within each) [1]", 1, 1000);
    p.str("-o,--output", &o.output, "FMT", "md or json [md]");
    p.flag("--keep-spec", &o.keep_spec,
           "one speculator (drafters + depth policy) for all prompts of a pass, as a "
           "server slot keeps it across requests (default: a fresh one per prompt)");
    p.flag("--per-prompt", &o.per_prompt, "md: also print tokens per decode and prompt n-gram overlap per prompt");
    p.i32("--cost-curve", &o.cost_curve,
          "K: first time one decode of 1+k rows, k = 0..K, after the first prompt "
          "(the verify cost curve); -1 off [-1]",
          -1, 1024);
    p.i32("--cost-reps", &o.cost_reps, "repetitions of the cost curve (median kept) [9]", 1, 1000);
    try {
        if (!p.parse(argc, argv)) return 0;
        if (o.model.model.empty()) fail("no model given (use -m FILE)");
        if (o.output != "md" && o.output != "json") fail("invalid value '%s' for -o: use md or json", o.output.c_str());
        if (log_level() < LogLevel::warn) log_set_level(LogLevel::warn);
        std::unique_ptr<Model> model = load_model(o.model);
        EngineParams ep = engine_params(o.model);
        Engine eng(*model, ep);
        const SpecOptions raw_spec = o.spec;  // each configuration's own flags start from the command line's
        finish_spec_options(o.spec, eng.params().n_ctx, eng.params().n_threads);

        std::vector<std::vector<int32_t>> prompts;
        for (const std::string& u : load_prompts(o.prompts))
            prompts.push_back(model->tokenizer().encode(wrap_chat(model->tokenizer(), u), true, true));
        if (o.cost_curve >= 0)
            print_verify_cost(o.output == "json" ? stderr : stdout,
                              measure_verify_cost(eng, prompts[0], o.cost_curve, o.cost_reps), prompts[0].size(),
                              o.cost_reps);
        std::vector<std::string> configs{"none"};
        if (o.types.empty()) {
            const std::string& md = o.spec.params.draft_model;  // -md: the kind its file is for
            for (const DrafterKind& k : drafter_kinds())
                if (!k.file_arch || (!md.empty() && &drafter_kind_for_file(md) == &k)) configs.push_back(k.name);
        } else {
            std::stringstream ss(o.types);
            std::string c;
            while (std::getline(ss, c, ';'))
                if (!c.empty() && c != "none") configs.push_back(c);
        }
        std::vector<ConfigResult> results(configs.size());
        std::vector<SpecParams> params(configs.size(), o.spec.params);
        for (size_t c = 0; c < configs.size(); c++) {
            results[c].name = configs[c];
            params[c] = config_params(configs[c], raw_spec, o.spec.params, eng.params().n_ctx, eng.params().n_threads);
        }
        for (int rep = 0; rep < o.reps; rep++)
            for (size_t c = 0; c < configs.size(); c++) {
                run_config(eng, o, prompts, params[c].types.empty() ? nullptr : &params[c], results[c], rep == 0);
                fprintf(stderr, "rep %d: %-28s %.2f t/s, %.2f t/CPU-s\n", rep + 1, configs[c].c_str(),
                        results[c].tps.back(), results[c].cpu_tps.back());
            }
        for (ConfigResult& r : results) r.same_as_none = r.outputs == results[0].outputs;
        if (o.output == "json") print_json(results);
        else print_md(results, o, o.model.model);
        if (o.output == "md" && o.per_prompt) print_per_prompt(results, prompts);
        return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace bee
