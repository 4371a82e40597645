// server/wire_generation: the shared generation fields and prompts, validated at the edge.
#include "server/wire_generation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <mutex>

#include "base/error.h"
#include "sample/json_schema.h"
#include "spec/registry.h"

namespace bee::server {

namespace {

std::vector<std::string> parse_stop(const Json& body) {
    std::vector<std::string> out;
    auto it = body.find("stop");
    if (it == body.end() || it->is_null()) return out;
    if (it->is_string()) {
        out.push_back(it->get<std::string>());
        return out;
    }
    if (!it->is_array()) bad_request("'stop' must be a string or an array of strings");
    for (const Json& s : *it) {
        if (!s.is_string()) bad_request("'stop' must be a string or an array of strings");
        out.push_back(s.get<std::string>());
    }
    return out;
}

// n_predict > max_completion_tokens > max_tokens > the server's -n.
int32_t parse_n_predict(const Json& body, const ServerContext& ctx) {
    for (const char* key : {"n_predict", "max_completion_tokens", "max_tokens"}) {
        auto it = body.find(key);
        if (it != body.end() && !it->is_null()) return (int32_t)get_int(body, key, -1, -1, INT32_MAX);
    }
    return ctx.params.n_predict;
}

// Fields we know but do not implement: refuse them rather than silently ignore them.
void refuse_unsupported(const Json& body, Api api) {
    if (api != Api::native) {
        if (get_bool(body, "echo", false)) bad_request("Only no echo is supported");
        for (const char* key : {"best_of", "suffix"})
            if (body.contains(key) && !body[key].is_null()) bad_request("Unsupported param: %s", key);
    }
}

// DRY's fields and llama.cpp's `samplers` (an array of names, or one string of names or letters).
void parse_dry_and_order(const Json& body, const Tokenizer& tok, SamplingParams& s) {
    s.dry_multiplier = (float)get_number(body, "dry_multiplier", s.dry_multiplier);
    s.dry_base = (float)get_number(body, "dry_base", s.dry_base);
    s.dry_allowed_length = (int32_t)get_int(body, "dry_allowed_length", s.dry_allowed_length, 0, INT32_MAX);
    s.dry_penalty_last_n = (int32_t)get_int(body, "dry_penalty_last_n", s.dry_penalty_last_n, -1, INT32_MAX);
    if (!(s.dry_multiplier >= 0) || !(s.dry_base >= 1))
        bad_request("'dry_multiplier' must be >= 0 and 'dry_base' >= 1 (got %g and %g)", s.dry_multiplier, s.dry_base);
    auto it = body.find("dry_sequence_breakers");
    if (it != body.end() && !it->is_null()) {
        if (!it->is_array()) bad_request("'dry_sequence_breakers' must be an array of strings");
        s.dry_sequence_breakers.clear();
        for (const Json& b : *it) {
            if (!b.is_string() || b.get<std::string>().empty())
                bad_request("'dry_sequence_breakers' must be an array of non-empty strings");
            s.dry_sequence_breakers.push_back(b.get<std::string>());
        }
    }
    bind_dry_breakers(s, [&tok](int32_t id) { return tok.token_to_piece(id, false); });
    it = body.find("samplers");
    if (it != body.end() && !it->is_null() && !(it->is_array() && it->empty())) {
        try {
            if (it->is_string()) {
                s.order = parse_sampler_order(it->get<std::string>());
            } else if (it->is_array()) {
                std::vector<std::string> names;
                for (const Json& n : *it) {
                    if (!n.is_string()) bad_request("'samplers' must be an array of sampler names or a string");
                    names.push_back(n.get<std::string>());
                }
                s.order = parse_sampler_order(names);
            } else {
                bad_request("'samplers' must be an array of sampler names or a string");
            }
        } catch (const Error& e) {
            bad_request("'samplers': %s", e.what());
        }
    }
}

// A logit_bias bias: a finite number, or false (never draw the token).
float parse_bias(const Json& v, const std::string& where) {
    if (v.is_boolean()) {
        if (!v.get<bool>()) return -std::numeric_limits<float>::infinity();
        bad_request("'logit_bias' %s: true is not a bias; give a number, or false to ban the token", where.c_str());
    }
    if (!v.is_number() || !std::isfinite(v.get<double>()))
        bad_request("'logit_bias' %s: the bias must be a finite number or false", where.c_str());
    return (float)v.get<double>();
}

// logit_bias: OpenAI's {"token id": bias}, or llama.cpp's [[token, bias], ...]. A token may also be given as
// text (an object key that is not a number, or a string in the array form): every token of that text gets
// the bias. A bias of false bans the token.
std::vector<std::pair<int32_t, float>> parse_logit_bias(const Json& body, const Tokenizer& tok) {
    std::vector<std::pair<int32_t, float>> out;
    auto it = body.find("logit_bias");
    if (it == body.end() || it->is_null()) return out;
    auto add = [&](const Json& token, float bias, const std::string& where) {
        if (token.is_number_integer()) {
            const int64_t id = token.get<int64_t>();
            if (id < 0 || id >= tok.n_vocab())
                bad_request("'logit_bias' %s: token id %lld is outside the vocabulary [0, %d)", where.c_str(),
                            (long long)id, tok.n_vocab());
            out.push_back({(int32_t)id, bias});
        } else if (token.is_string()) {
            for (int32_t id : tok.encode(token.get<std::string>(), false, false)) out.push_back({id, bias});
        } else {
            bad_request("'logit_bias' %s: a token must be an id or a string", where.c_str());
        }
    };
    if (it->is_object()) {
        for (const auto& [key, v] : it->items()) {
            const std::string where = "key \"" + key + "\"";
            const bool numeric = !key.empty() && key.size() < 10 && std::all_of(key.begin(), key.end(), ::isdigit);
            add(numeric ? Json(std::stoll(key)) : Json(key), parse_bias(v, where), where);
        }
    } else if (it->is_array()) {
        for (size_t i = 0; i < it->size(); i++) {
            const Json& e = (*it)[i];
            const std::string where = strfmt("[%zu]", i);
            if (!e.is_array() || e.size() != 2)
                bad_request("'logit_bias' %s must be a pair [token, bias]", where.c_str());
            add(e[0], parse_bias(e[1], where), where);
        }
    } else {
        bad_request("'logit_bias' must be an object {\"token id\": bias} or an array [[token, bias], ...]");
    }
    return out;
}

// grammar (GBNF), json_schema, or response_format json_object / json_schema: one GBNF text, or "".
std::string constraint_gbnf(const Json& body) {
    auto given = [&](const char* key) { return body.contains(key) && !body[key].is_null(); };
    if (given("grammar") && given("json_schema")) bad_request("Cannot use both json_schema and grammar");
    const Json* schema = nullptr;
    bool any_object = false;
    if (given("response_format")) {
        const Json& rf = body["response_format"];
        const std::string type = rf.is_object() ? get_string(rf, "type", "") : "";
        if (type == "json_object") {
            if (rf.contains("schema") && !rf["schema"].is_null()) schema = &rf["schema"];
            else any_object = true;
        } else if (type == "json_schema") {
            const Json* js = rf.contains("json_schema") ? &rf["json_schema"] : nullptr;
            if (!js || !js->is_object() || !js->contains("schema"))
                bad_request("'response_format' of type json_schema needs {\"json_schema\": {\"schema\": {...}}}");
            schema = &(*js)["schema"];
        } else if (type != "text") {
            bad_request(
                "'response_format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                "{\"type\": \"json_schema\", \"json_schema\": {\"schema\": {...}}}");
        }
        if ((schema || any_object) && (given("grammar") || given("json_schema")))
            bad_request("Cannot use response_format together with grammar or json_schema");
    }
    if (given("json_schema")) schema = &body["json_schema"];
    try {
        if (any_object) return json_object_gbnf();
        if (schema) return json_schema_to_gbnf(*schema);
    } catch (const Error& e) {
        bad_request("%s", e.what());
    }
    if (!given("grammar")) return "";
    if (!body["grammar"].is_string()) bad_request("'grammar' must be a string of GBNF rules");
    return body["grammar"].get<std::string>();
}

void parse_logprobs(const Json& body, Api api, GenParams& g) {
    g.n_probs = (int32_t)get_int(body, "n_probs", 0, 0, 100);
    auto lp = body.find("logprobs");
    const bool has_lp = lp != body.end() && !lp->is_null();
    if (api == Api::oai_completion) {  // OpenAI text completions: logprobs is the number of alternatives
        if (has_lp) {
            g.want_logprobs = true;
            g.n_probs = (int32_t)get_int(body, "logprobs", 0, 0, 20);
        }
        return;
    }
    if (api == Api::oai_chat) {
        const bool want = get_bool(body, "logprobs", false);
        if (body.contains("top_logprobs") && !body["top_logprobs"].is_null() && !want)
            bad_request("'top_logprobs' requires 'logprobs' to be true");
        if (want) {
            g.want_logprobs = true;
            g.n_probs = (int32_t)get_int(body, "top_logprobs", 20, 0, 20);
        }
        return;
    }
    g.want_logprobs = g.n_probs > 0;
}

void parse_reasoning_overrides(const Json& body, const ServerContext& ctx, GenParams& g) {
    g.reasoning_budget = ctx.params.reasoning_budget;
    if (g.reasoning_budget < 0)
        g.reasoning_budget = (int32_t)get_int(body, "thinking_budget_tokens", -1, -1, INT32_MAX);
    g.reasoning_budget_message = ctx.params.reasoning_budget_message;
    chat::LoopGuardParams& lg = g.loop_guard;
    lg = ctx.params.loop_guard;
    if (body.contains("reasoning_loop_guard") && !body["reasoning_loop_guard"].is_null()) {
        try {
            lg.mode = chat::parse_loop_guard_mode(get_string(body, "reasoning_loop_guard", ""), "reasoning_loop_guard");
        } catch (const Error& e) {
            bad_request("%s", e.what());
        }
    }
    struct {
        const char* key;
        int32_t* field;
    } ints[] = {{"reasoning_loop_min_tokens", &lg.min_tokens},
                {"reasoning_loop_window", &lg.window},
                {"reasoning_loop_max_period", &lg.max_period},
                {"reasoning_loop_min_coverage", &lg.min_coverage},
                {"reasoning_loop_check_interval", &lg.check_interval},
                {"reasoning_loop_interventions", &lg.interventions}};
    for (auto& f : ints) *f.field = (int32_t)get_int(body, f.key, *f.field, INT32_MIN, INT32_MAX);
    try {
        lg.validate("request");
    } catch (const Error& e) {
        bad_request("%s", e.what());
    }
}

// speculative.n_max / n_min / p_min / type, as flat dotted keys (llama-server) or in a "speculative"
// object; the flat keys win. n_min above n_max is clamped to it (as llama-server does); a negative or
// non-numeric value, p_min outside [0, 1], or a type the server was not started with is a 400.
void parse_spec_overrides(const Json& body, const ServerContext& ctx, GenParams& g) {
    Json f = Json::object();
    if (auto it = body.find("speculative"); it != body.end() && !it->is_null()) {
        if (!it->is_object())
            bad_request("'speculative' must be an object (e.g. {\"n_max\": 8, \"type\": \"suffix\"})");
        for (auto& [k, v] : it->items()) f["speculative." + k] = v;
    }
    for (const char* k : {"speculative.n_max", "speculative.n_min", "speculative.p_min", "speculative.type"})
        if (auto it = body.find(k); it != body.end()) f[k] = *it;
    GenParams::Spec& sp = g.spec;
    sp.n_max = (int32_t)get_int(f, "speculative.n_max", -1, 0, 1024);
    sp.n_min = (int32_t)get_int(f, "speculative.n_min", -1, 0, 1024);
    if (sp.n_max >= 0 && sp.n_min > sp.n_max) sp.n_min = sp.n_max;
    sp.p_min = (float)get_number(f, "speculative.p_min", -1.0);
    if (f.contains("speculative.p_min") && !f["speculative.p_min"].is_null() && !(sp.p_min >= 0 && sp.p_min <= 1))
        bad_request("'speculative.p_min' is %g but must be in [0, 1]", sp.p_min);
    auto t = f.find("speculative.type");
    if (t == f.end() || t->is_null()) return;
    std::string list;  // a comma list or an array of names
    if (t->is_string()) {
        list = t->get<std::string>();
    } else if (t->is_array()) {
        for (const Json& x : *t) {
            if (!x.is_string()) bad_request("'speculative.type' must be a string or an array of strings");
            list += (list.empty() ? "" : ",") + x.get<std::string>();
        }
    } else {
        bad_request("'speculative.type' must be a string or an array of strings");
    }
    try {
        sp.types = parse_spec_types(list);
    } catch (const Error& e) {
        bad_request("'speculative.type': %s", e.what());
    }
    sp.types_given = true;
    const std::vector<std::string>& on = ctx.scheduler->spec_params().types;
    for (const std::string& name : sp.types)
        if (std::find(on.begin(), on.end(), name) == on.end()) {
            std::string started;
            for (const std::string& x : on) started += (started.empty() ? "" : ",") + x;
            bad_request(
                "'speculative.type': '%s' is not enabled on this server (started with --spec-type %s); a "
                "request may use the server's types, a subset of them, or none",
                name.c_str(), started.empty() ? "none" : started.c_str());
        }
}

}  // namespace

GenParams parse_gen_params(const Json& body, const ServerContext& ctx, Api api) {
    refuse_unsupported(body, api);
    GenParams g;
    SamplingParams& s = g.sampling;
    s = ctx.params.sampling;
    s.temp = (float)get_number(body, "temperature", s.temp);
    s.top_k = (int32_t)get_int(body, "top_k", s.top_k, INT32_MIN, INT32_MAX);
    s.top_p = (float)get_number(body, "top_p", s.top_p);
    s.min_p = (float)get_number(body, "min_p", s.min_p);
    s.repeat_penalty = (float)get_number(body, "repeat_penalty", s.repeat_penalty);
    s.repeat_last_n = (int32_t)get_int(body, "repeat_last_n", s.repeat_last_n, -1, INT32_MAX);
    s.presence_penalty = (float)get_number(body, "presence_penalty", s.presence_penalty);
    s.frequency_penalty = (float)get_number(body, "frequency_penalty", s.frequency_penalty);
    s.top_n_sigma = (float)get_number(body, "top_n_sigma", s.top_n_sigma);
    s.typical_p = (float)get_number(body, "typical_p", s.typical_p);
    s.xtc_probability = (float)get_number(body, "xtc_probability", s.xtc_probability);
    s.xtc_threshold = (float)get_number(body, "xtc_threshold", s.xtc_threshold);
    s.dynatemp_range = (float)get_number(body, "dynatemp_range", s.dynatemp_range);
    s.dynatemp_exponent = (float)get_number(body, "dynatemp_exponent", s.dynatemp_exponent);
    s.min_keep = (int32_t)get_int(body, "min_keep", s.min_keep, 0, INT32_MAX);
    if (!(s.dynatemp_exponent > 0)) bad_request("'dynatemp_exponent' must be > 0");
    s.mirostat = (int32_t)get_int(body, "mirostat", s.mirostat, 0, 2);
    s.mirostat_tau = (float)get_number(body, "mirostat_tau", s.mirostat_tau);
    s.mirostat_eta = (float)get_number(body, "mirostat_eta", s.mirostat_eta);
    if (s.mirostat && !(s.mirostat_tau > 0 && s.mirostat_eta >= 0))
        bad_request("'mirostat_tau' must be > 0 and 'mirostat_eta' >= 0");
    parse_dry_and_order(body, ctx.tokenizer(), s);
    if (body.contains("logit_bias") && !body["logit_bias"].is_null())  // replaces the server's --logit-bias
        s.logit_bias = parse_logit_bias(body, ctx.tokenizer());
    const int64_t seed = get_int(body, "seed", s.seed == 0xFFFFFFFFu ? -1 : (int64_t)s.seed);
    s.seed = seed < 0 ? 0xFFFFFFFFu : (uint64_t)seed;
    if (!(s.repeat_penalty > 0)) bad_request("'repeat_penalty' must be > 0");
    if (s.temp < 0) s.temp = 0;  // llama.cpp treats negative temperature as greedy
    g.n_predict = parse_n_predict(body, ctx);
    g.stop = parse_stop(body);
    g.ignore_eos = get_bool(body, "ignore_eos", ctx.params.ignore_eos);
    g.special = ctx.params.special;
    g.cache_prompt = get_bool(body, "cache_prompt", ctx.params.cache_prompt);
    g.n_cache_reuse = (int32_t)get_int(body, "n_cache_reuse", ctx.params.n_cache_reuse, 0, INT32_MAX);
    g.id_slot = (int32_t)get_int(body, "id_slot", -1, -1, ctx.scheduler->n_parallel() - 1);
    parse_logprobs(body, api, g);
    g.post_sampling_probs = get_bool(body, "post_sampling_probs", false);
    g.timings_per_token = get_bool(body, "timings_per_token", false);
    g.t_max_predict_ms = get_number(body, "t_max_predict_ms", 0);
    g.return_progress = get_bool(body, "return_progress", false);
    g.n_keep = (int32_t)get_int(body, "n_keep", ctx.params.n_keep, -1, INT32_MAX);
    g.n_discard = (int32_t)get_int(body, "n_discard", 0, 0, INT32_MAX);
    g.n_indent = (int32_t)get_int(body, "n_indent", 0, 0, INT32_MAX);
    if (auto rf = body.find("response_fields"); rf != body.end() && !rf->is_null()) {
        if (!rf->is_array()) bad_request("'response_fields' must be an array of field paths such as \"content\"");
        for (const Json& f : *rf) {
            if (!f.is_string()) bad_request("'response_fields' must be an array of field paths such as \"content\"");
            g.response_fields.push_back(f.get<std::string>());
        }
    }
    if (!(g.t_max_predict_ms >= 0)) bad_request("'t_max_predict_ms' must be >= 0");
    parse_reasoning_overrides(body, ctx, g);
    parse_spec_overrides(body, ctx, g);
    auto lora = body.find("lora");  // llama-server's: adapters not listed run at scale 0
    g.lora = lora != body.end() && !lora->is_null()
                 ? parse_lora_list(*lora, ctx.engine->lora_adapters().size(), "'lora'")
                 : ctx.lora_scales();
    std::string gbnf = constraint_gbnf(body);
    if (gbnf.empty()) gbnf = ctx.params.grammar;  // --grammar / --json-schema
    if (!gbnf.empty()) set_grammar(g, gbnf, ctx.tokenizer());
    return g;
}

int32_t parse_n_choices(const Json& body) {
    const char* key = body.contains("n") && !body["n"].is_null() ? "n" : "n_cmpl";
    return (int32_t)get_int(body, key, 1, 1, kMaxChoices);
}

std::shared_ptr<const GrammarVocab> grammar_vocab(const Tokenizer& tok) {
    static std::mutex mu;
    static const Tokenizer* owner = nullptr;
    static std::shared_ptr<const GrammarVocab> vocab;
    std::lock_guard<std::mutex> lk(mu);
    if (owner != &tok) {  // note: built once per model (~50k pieces), then shared by every request
        auto v = std::make_shared<GrammarVocab>();
        const int32_t n = tok.n_vocab();
        v->text.resize(n);
        v->is_eog.resize(n);
        for (int32_t id = 0; id < n; id++) {
            v->is_eog[id] = tok.is_eog(id) ? 1 : 0;
            v->text[id] = tok.token_to_piece(id, false);  // control tokens: "" (never allowed)
        }
        v->trie();  // the prefix trie every grammar's vocabulary scans walk
        vocab = std::move(v);
        owner = &tok;
    }
    return vocab;
}

// note: everything a grammar costs before its first token (parsing, the matcher's start, the vocabulary
// scan there) is paid here, on the request's own thread, so a large grammar never stalls the other slots.
void set_grammar(GenParams& g, const std::string& gbnf, const Tokenizer& tok) {
    std::shared_ptr<GrammarConstraint> c;
    try {
        c = std::make_shared<GrammarConstraint>(Grammar::parse(gbnf), grammar_vocab(tok));
    } catch (const Error& e) {
        bad_request("%s", e.what());
    }
    c->prepare();
    g.grammar = std::move(c);
}

std::vector<int32_t> tokenize_prompt(const Json& prompt, const Tokenizer& tok) {
    std::vector<int32_t> out;
    if (prompt.is_string()) return tok.encode(prompt.get<std::string>(), true, true);
    if (prompt.is_object()) {  // llama-server's {"prompt_string": "...", "multimodal_data": ["base64", ...]}
        auto media = prompt.find("multimodal_data");
        if (media != prompt.end() && !media->is_null() && !(media->is_array() && media->empty()))
            bad_request(
                "'prompt'.multimodal_data: this server has no multimodal projector, so it cannot take images or "
                "audio; send the prompt as text only");
        auto text = prompt.find("prompt_string");
        if (text == prompt.end() || !text->is_string())
            bad_request("a 'prompt' object must have a string 'prompt_string' ({\"prompt_string\": \"...\"})");
        return tok.encode(text->get<std::string>(), true, true);
    }
    if (!prompt.is_array() || prompt.empty())
        bad_request(
            "'prompt' must be a string, an array of token ids, an array mixing both, or {\"prompt_string\": "
            "\"...\"}");
    bool first = true;
    for (const Json& p : prompt) {
        if (p.is_string()) {
            std::vector<int32_t> t = tok.encode(p.get<std::string>(), first, true);
            out.insert(out.end(), t.begin(), t.end());
        } else if (p.is_number_integer()) {
            const int64_t id = p.get<int64_t>();
            if (id < 0 || id >= tok.n_vocab())
                bad_request("token id %lld in 'prompt' is out of range [0, %d)", (long long)id, tok.n_vocab());
            out.push_back((int32_t)id);
        } else {
            bad_request("'prompt' array elements must be strings or token ids");
        }
        first = false;
    }
    return out;
}

std::vector<std::vector<int32_t>> tokenize_prompts(const Json& prompt, const Tokenizer& tok) {
    bool strings = prompt.is_array() && !prompt.empty(), numbers = false, arrays = false;
    for (const Json& p : prompt.is_array() ? prompt : Json::array()) {
        strings = strings && p.is_string();
        numbers = numbers || p.is_number();
        arrays = arrays || p.is_array() || p.is_object();  // an object is one prompt ({"prompt_string"})
    }
    if (!strings && !arrays) return {tokenize_prompt(prompt, tok)};  // one prompt (string, ids, or mixed)
    if (numbers) bad_request("'prompt' mixes token ids with nested prompts; give one prompt or an array of prompts");
    if ((int32_t)prompt.size() > kMaxChoices)
        bad_request("'prompt' holds %zu prompts; at most %d per request", prompt.size(), kMaxChoices);
    std::vector<std::vector<int32_t>> out;
    for (const Json& p : prompt) {
        if (p.is_array() && !p.empty() && std::any_of(p.begin(), p.end(), [](const Json& x) { return x.is_array(); }))
            bad_request(
                "'prompt': a prompt in the array must be a string, token ids, or both mixed, not deeper arrays");
        out.push_back(tokenize_prompt(p, tok));
    }
    return out;
}

std::vector<std::shared_ptr<Task>> make_tasks(ServerContext& ctx, const std::vector<int32_t>& prompt,
                                              const GenParams& params, int32_t n) {
    std::vector<std::shared_ptr<Task>> tasks;
    for (int32_t i = 0; i < n; i++) {
        GenParams p = params;
        if (p.sampling.seed != 0xFFFFFFFFu) {  // choice i: seed + i (a random seed stays random)
            p.sampling.seed += (uint64_t)i;
            if (p.sampling.seed == 0xFFFFFFFFu) p.sampling.seed++;  // seed + i must not mean "random"
        }
        tasks.push_back(make_task(ctx, prompt, std::move(p)));
    }
    return tasks;
}

std::vector<std::shared_ptr<Task>> make_prompt_tasks(ServerContext& ctx,
                                                     const std::vector<std::vector<int32_t>>& prompts,
                                                     const GenParams& params, int32_t n) {
    std::vector<std::shared_ptr<Task>> tasks;
    for (const std::vector<int32_t>& p : prompts)
        for (auto& t : make_tasks(ctx, p, params, n)) tasks.push_back(std::move(t));
    return tasks;
}

std::shared_ptr<Task> make_task(ServerContext& ctx, std::vector<int32_t> prompt, GenParams params) {
    if (prompt.empty()) bad_request("the prompt is empty");
    const int32_t n_ctx = ctx.scheduler->n_ctx_slot();
    if ((int64_t)prompt.size() >= n_ctx)
        throw HttpError(400, "exceed_context_size_error",
                        strfmt("request (%zu tokens) exceeds the available context size (%d tokens), try increasing it",
                               prompt.size(), n_ctx),
                        Json{{"n_prompt_tokens", prompt.size()}, {"n_ctx", n_ctx}});
    auto t = std::make_shared<Task>();
    t->id = ctx.next_task_id++;
    t->prompt = std::move(prompt);
    t->params = std::move(params);
    return t;
}

std::vector<float> parse_lora_list(const Json& list, size_t n_adapters, const char* where) {
    if (!list.is_array()) bad_request("%s must be an array of {\"id\": N, \"scale\": S} objects", where);
    std::vector<float> scales(n_adapters, 0.0f);
    for (const Json& e : list) {
        if (!e.is_object()) bad_request("%s must be an array of {\"id\": N, \"scale\": S} objects", where);
        const int64_t id = get_int(e, "id", -1);
        if (id < 0 || (uint64_t)id >= n_adapters) {
            if (n_adapters == 0)
                bad_request("%s: no LoRA adapter with id %lld: this server has none (load them with --lora FILE)",
                            where, (long long)id);
            bad_request("%s: no LoRA adapter with id %lld (ids are 0..%zu; GET /lora-adapters lists them)", where,
                        (long long)id, n_adapters - 1);
        }
        const double scale = get_number(e, "scale", 0.0);
        if (!std::isfinite(scale) || !std::isfinite((float)scale))
            bad_request("%s: the scale of adapter %lld must be a finite number", where, (long long)id);
        scales[(size_t)id] = (float)scale;
    }
    return scales;
}

}  // namespace bee::server
