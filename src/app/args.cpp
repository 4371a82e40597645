// app/args: parser and shared option groups.
#include "app/args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <sys/mman.h>

#include "app/args_compat.h"
#include "app/args_device.h"
#include "base/error.h"
#include "base/log.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace bee {

static std::vector<std::string> split_names(const char* names) {
    std::vector<std::string> out;
    std::string cur;
    for (const char* p = names;; p++) {
        if (*p == ',' || *p == 0) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
            if (*p == 0) break;
        } else {
            cur += *p;
        }
    }
    return out;
}

// "-ctk,--cache-type-k" -> "-ctk/--cache-type-k": errors name every spelling the user may have typed.
static std::string display_name(const char* names) {
    std::string s;
    for (const std::string& n : split_names(names)) s += (s.empty() ? "" : "/") + n;
    return s;
}

void ArgParser::flag(const char* names, bool* out, const char* help) {
    opts_.push_back({split_names(names), false, "", help, [out](const std::string&) { *out = true; }});
}

void ArgParser::str(const char* names, std::string* out, const char* meta, const char* help) {
    opts_.push_back({split_names(names), true, meta, help, [out](const std::string& v) { *out = v; }});
}

void ArgParser::custom(const char* names, const char* meta, const char* help,
                       std::function<void(const std::string&)> fn) {
    opts_.push_back({split_names(names), true, meta, help, std::move(fn)});
}

// Parses a whole-string integer or throws Error naming the flag.
static long long parse_integer(const std::string& v, const std::string& flag) {
    char* end = nullptr;
    errno = 0;
    long long x = strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end || errno) fail("invalid value '%s' for %s: expected an integer", v.c_str(), flag.c_str());
    return x;
}

void ArgParser::i32(const char* names, int32_t* out, const char* help, int64_t lo, int64_t hi) {
    const std::string flag = display_name(names);
    custom(names, "N", help, [=](const std::string& v) {
        long long x = parse_integer(v, flag);
        if (x < lo || x > hi)
            fail("invalid value %lld for %s: must be in [%lld, %lld]", x, flag.c_str(), (long long)lo, (long long)hi);
        *out = (int32_t)x;
    });
}

void ArgParser::u64(const char* names, uint64_t* out, const char* help) {
    const std::string flag = display_name(names);
    custom(names, "N", help, [=](const std::string& v) {
        long long x = parse_integer(v, flag);
        *out = x < 0 ? 0xFFFFFFFFull : (uint64_t)x;  // -1: random, as llama.cpp
    });
}

void ArgParser::f32(const char* names, float* out, const char* help, float lo, float hi) {
    const std::string flag = display_name(names);
    custom(names, "X", help, [=](const std::string& v) {
        char* end = nullptr;
        errno = 0;
        float x = strtof(v.c_str(), &end);
        if (v.empty() || *end || errno) fail("invalid value '%s' for %s: expected a number", v.c_str(), flag.c_str());
        if (x < lo || x > hi) fail("invalid value %g for %s: must be in [%g, %g]", x, flag.c_str(), lo, hi);
        *out = x;
    });
}

void ArgParser::custom_pair(const char* names, const char* meta, const char* help,
                            std::function<bool(const std::string&, const char*)> fn) {
    Opt o{split_names(names), true, meta, help, nullptr};
    o.set_pair = std::move(fn);
    opts_.push_back(std::move(o));
}

void ArgParser::action(const char* names, const char* help, std::function<void()> fn) {
    opts_.push_back({split_names(names), false, "", help, [fn = std::move(fn)](const std::string&) { fn(); }});
}

void ArgParser::ignored(const char* names, int n_values, const char* note) {
    const std::string flag = display_name(names);
    std::vector<std::string>* notes = &notes_;
    auto seen = std::make_shared<bool>(false);
    opts_.push_back({split_names(names), n_values > 0, "X", note,
                     [=](const std::string& v) {
                         if (*seen) return;  // reported once, with the first value given
                         *seen = true;
                         notes->push_back(flag + (v.empty() ? "" : " " + v) + ": ignored: " + note);
                     },
                     Kind::ignored});
}

void ArgParser::refused(const char* names, const char* reason) {
    opts_.push_back({split_names(names), false, "", reason, [](const std::string&) {}, Kind::refused});
}

void ArgParser::exit_with(const char* names, const char* help, std::string text) {
    opts_.push_back({split_names(names), false, "", help,
                     [this, text = std::move(text)](const std::string&) {
                         exit_text_ = text;
                         exit_ = true;
                     },
                     Kind::exit});
}

// A command's own option wins over a llama.cpp compatibility row of the same name (bench's -r is
// --repetitions, llama-cli's is --reverse-prompt), whatever the order they were added in.
const ArgParser::Opt* ArgParser::find(const std::string& name) const {
    const Opt* compat = nullptr;
    for (const Opt& o : opts_)
        for (const std::string& n : o.names)
            if (n == name) {
                if (o.kind != Kind::ignored && o.kind != Kind::refused) return &o;
                if (!compat) compat = &o;
            }
    return compat;
}

bool ArgParser::has(const std::string& name, bool* takes_value) const {
    const Opt* o = find(name);
    if (o && takes_value) *takes_value = o->takes_value;
    return o != nullptr;
}

bool ArgParser::parse(int argc, char** argv) {
    for (int i = 0; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            fputs(usage().c_str(), stdout);
            return false;
        }
        std::string value;
        bool has_inline = false;
        if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
            value = a.substr(a.find('=') + 1);
            a = a.substr(0, a.find('='));
            has_inline = true;
        }
        if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && (isdigit((unsigned char)a[1]) || a[1] == '.'))) {
            const Opt* o = find(a);
            if (!o) fail("unknown option '%s' (see %s --help)", a.c_str(), prog_.c_str());
            if (o->kind == Kind::refused) fail("%s is not supported: %s", a.c_str(), o->help.c_str());
            if (o->takes_value && !has_inline) {
                if (i + 1 >= argc) fail("option %s needs a value (%s)", a.c_str(), o->meta.c_str());
                value = argv[++i];
            }
            if (o->set_pair) {
                if (o->set_pair(value, !has_inline && i + 1 < argc ? argv[i + 1] : nullptr)) i++;
            } else {
                o->set(value);
            }
            if (exit_) {
                fputs(exit_text_.c_str(), stdout);
                return false;
            }
        } else {
            if (!pos_) fail("unexpected argument '%s' (see %s --help)", a.c_str(), prog_.c_str());
            pos_->push_back(a);
        }
    }
    for (const std::string& n : notes_) BEE_LOG_INFO("%s", n.c_str());
    return true;
}

std::string ArgParser::usage() const {
    std::string s = "usage: " + prog_ + " [options]" + (pos_ ? " " + pos_meta_ : "") + "\n" + summary_ + "\n\n";
    std::string ignored, refused;
    for (const Opt& o : opts_) {
        if (o.kind == Kind::ignored || o.kind == Kind::refused) {
            for (const std::string& n : o.names)  // the first name no own option of the command takes
                if (find(n) == &o) {
                    (o.kind == Kind::ignored ? ignored : refused) += " " + n;
                    break;
                }
            continue;
        }
        std::string left;
        for (const std::string& n : o.names) left += (left.empty() ? "" : ", ") + n;
        if (o.takes_value) left += " " + o.meta;
        s += strfmt("  %-34s %s\n", left.c_str(), o.help.c_str());
    }
    if (!ignored.empty())
        s += "\nllama.cpp flags accepted with no effect here (each reported at start-up):" + ignored + "\n";
    if (!refused.empty()) s += "\nllama.cpp flags refused, with the reason:" + refused + "\n";
    return s;
}

// "on" / "off" for --kv-auto-asymmetric.
static bool parse_on_off(const std::string& v, const char* flag) {
    if (v == "on") return true;
    if (v == "off") return false;
    fail("invalid value '%s' for %s: expected on or off", v.c_str(), flag);
}

void add_log_options(ArgParser& p) {
    p.action("-v,--verbose,--log-verbose", "log everything (debug level)", [] { log_set_level(LogLevel::debug); });
    p.custom("-lv,--verbosity,--log-verbosity", "N", "log threshold: 1 errors, 2 warnings, 3 info, 4 debug [3]",
             [](const std::string& v) {
                 const long long n = parse_integer(v, "-lv/--verbosity");
                 log_set_level(n >= 4   ? LogLevel::debug
                               : n == 3 ? LogLevel::info
                               : n == 2 ? LogLevel::warn
                                        : LogLevel::error);
             });
    p.action("--log-disable", "no log output", [] { log_set_level(LogLevel::off); });
    p.custom("--log-file", "FILE", "also write the log to FILE", [](const std::string& v) {
        FILE* f = fopen(v.c_str(), "a");  // note: stays open for the life of the process
        if (!f) fail("--log-file %s: cannot open for writing: %s", v.c_str(), strerror(errno));
        log_set_file(f);
    });
    p.action("--log-timestamps", "start each log line with the time", [] { log_set_timestamps(true); });
    p.action("--no-log-timestamps", "no time on log lines (the default)", [] { log_set_timestamps(false); });
}

// --rope-scaling none|linear|yarn
static std::string parse_rope_scaling(const std::string& v) {
    if (v == "none" || v == "linear" || v == "yarn") return v;
    fail("invalid value '%s' for --rope-scaling: expected none, linear or yarn", v.c_str());
}

// Rope and load-time flags (llama.cpp names) into ModelLoadParams, plus --mlock.
static void add_load_options(ArgParser& p, ModelOptions& o) {
    ModelLoadParams& l = o.load;
    p.custom("--override-kv", "KEY=TYPE:VALUE,...",
             "override model metadata (TYPE int, float, bool, str), e.g. llama.context_length=int:8192",
             [&l](const std::string& v) {
                 for (GgufOverride& ov : parse_gguf_overrides(v)) l.kv_overrides.push_back(std::move(ov));
             });
    p.custom("--rope-scaling", "none|linear|yarn", "rope frequency scaling [the model's]",
             [&l](const std::string& v) { l.rope_scaling = parse_rope_scaling(v); });
    p.custom("--rope-scale", "N", "rope context scaling factor: scaling by N [the model's]",
             [&l](const std::string& v) {
                 float n = 0;
                 if (sscanf(v.c_str(), "%f", &n) != 1 || !(n > 0))
                     fail("invalid value '%s' for --rope-scale", v.c_str());
                 l.rope_freq_scale = 1.0f / n;
             });
    p.f32("--rope-freq-base", &l.rope_freq_base, "rope base frequency [the model's]", 0.0f, 1e12f);
    p.f32("--rope-freq-scale", &l.rope_freq_scale, "rope frequency scale: linear scaling by 1/N [the model's]", 0.0f,
          1e6f);
    p.i32("--yarn-orig-ctx", &l.yarn_orig_ctx, "YaRN: the model's trained context (0: the model's) [0]", 0, 1 << 24);
    p.f32("--yarn-ext-factor", &l.yarn_ext_factor,
          "YaRN: extrapolation mix, 0 = pure interpolation (-1: 1 for yarn models) [-1]", -1, 100);
    p.f32("--yarn-attn-factor", &l.yarn_attn_factor,
          "YaRN: magnitude of the rotation before its 1 + 0.1 ln(scale) (-1: from the scale) [-1]", -1, 100);
    p.f32("--yarn-beta-slow", &l.yarn_beta_slow, "YaRN: high correction dim, in rotations (-1: 1) [-1]", -1, 1e6f);
    p.f32("--yarn-beta-fast", &l.yarn_beta_fast, "YaRN: low correction dim, in rotations (-1: 32) [-1]", -1, 1e6f);
    p.flag("--check-tensors", &l.check_tensors, "check every tensor value is finite before loading (slower start)");
    p.flag("--mlock", &o.mlock, "lock the loaded model in RAM (no swapping)");
}

// A whole-string float, or false.
static bool parse_float(const std::string& v, float* out) {
    char* end = nullptr;
    errno = 0;
    *out = strtof(v.c_str(), &end);
    return !v.empty() && *end == 0 && errno == 0 && std::isfinite(*out);
}

// llama.cpp's LoRA flags: --lora FILE[,FILE...] (scale 1), --lora-scaled FILE SCALE or FILE:SCALE[,...].
static void add_lora_options(ArgParser& p, ModelOptions& o) {
    p.custom("--lora", "FILE", "LoRA adapter applied at scale 1 (repeatable; FILE,FILE,... for several)",
             [&o](const std::string& v) {
                 for (const std::string& f : split_names(v.c_str())) o.lora.push_back({f, 1.0f});
             });
    p.custom_pair("--lora-scaled", "FILE SCALE",
                  "LoRA adapter applied at SCALE (repeatable; also llama.cpp's FILE:SCALE,FILE:SCALE,...)",
                  [&o](const std::string& v, const char* next) {
                      float scale = 0;
                      if (next && parse_float(next, &scale)) {
                          o.lora.push_back({v, scale});
                          return true;
                      }
                      for (const std::string& item : split_names(v.c_str())) {
                          const size_t colon = item.rfind(':');
                          if (colon == std::string::npos || !parse_float(item.substr(colon + 1), &scale))
                              fail("--lora-scaled %s: expected FILE SCALE, or FILE:SCALE[,FILE:SCALE...]", v.c_str());
                          o.lora.push_back({item.substr(0, colon), scale});
                      }
                      return false;
                  });
    p.flag("--lora-init-without-apply", &o.lora_init_without_apply,
           "load the LoRA adapters with scale 0 (set scales later: POST /lora-adapters, or per request)");
}

void add_model_options(ArgParser& p, ModelOptions& o) {
    p.str("-m,--model", &o.model, "FILE", "model GGUF file");
    p.i32("-c,--ctx-size", &o.n_ctx, "context size in tokens (0: the model's) [4096]", 0, 1 << 24);
    p.i32("-b,--batch-size", &o.n_batch, "logical batch size for prompt processing [2048]", 1, 1 << 20);
    p.i32("-ub,--ubatch-size", &o.n_ubatch, "physical batch size (rows per forward pass) [512]", 1, 1 << 20);
    p.i32("-t,--threads", &o.n_threads, "threads (0: all cores) [0]", 0, 4096);
    p.custom("-ctk,--cache-type-k", "TYPE", (std::string("KV cache type for K: ") + kv_type_names() + " [f16]").c_str(),
             [&o](const std::string& v) { o.type_k = kv_type_from_name(v, "-ctk/--cache-type-k"); });
    p.custom("-ctv,--cache-type-v", "TYPE", (std::string("KV cache type for V: ") + kv_type_names() + " [f16]").c_str(),
             [&o](const std::string& v) { o.type_v = kv_type_from_name(v, "-ctv/--cache-type-v"); });
    p.custom("--kv-auto-asymmetric", "on|off", "keep turbo K at q8_0 on fragile models (GQA >= 6, small) [on]",
             [&o](const std::string& v) { o.kv_auto_asymmetric = parse_on_off(v, "--kv-auto-asymmetric"); });
    p.custom("--kv-rotate", "on|off",
             "store q8_0/q4_0/q4_1/q5_0/q5_1 KV Hadamard-rotated (head sizes a multiple of 64) [on]",
             [&o](const std::string& v) { o.kv_rotate = parse_on_off(v, "--kv-rotate"); });
    p.custom("--kv-boundary-layers", "N|auto|0",
             "keep turbo V at q8_0 on the first and last N layers (auto: 2 on models of 16+ layers; 0: none) [auto]",
             [&o](const std::string& v) { o.kv_boundary_layers = kv_boundary_from_name(v, "--kv-boundary-layers"); });
    add_load_options(p, o);
    add_lora_options(p, o);
    add_device_options(p, o.offload);
    add_log_options(p);
    add_compat_options(p, kCompatModel);
}

void lock_model_memory() {
    if (mlockall(MCL_CURRENT) != 0)
        BEE_LOG_WARN("--mlock: cannot lock the model in RAM (%s); raise RLIMIT_MEMLOCK (ulimit -l)", strerror(errno));
    else BEE_LOG_INFO("--mlock: the model is locked in RAM");
}

std::unique_ptr<Model> load_model(const ModelOptions& o) {
    std::unique_ptr<Model> m = Model::load(o.model, o.load);
    if (o.mlock) lock_model_memory();
    return m;
}

// llama.cpp's --logit-bias value: TOKEN_ID+BIAS or TOKEN_ID-BIAS (BIAS a number or inf; -inf bans it).
static std::pair<int32_t, float> parse_logit_bias_arg(const std::string& v) {
    const size_t at = v.find_first_of("+-", 1);
    const std::string id = v.substr(0, at), bias = at == std::string::npos ? "" : v.substr(at + 1);
    char* end = nullptr;
    errno = 0;
    const long tok = std::strtol(id.c_str(), &end, 10);
    const bool id_ok = !id.empty() && *end == '\0' && errno == 0 && tok >= 0 && tok <= INT32_MAX;
    end = nullptr;
    float b = bias == "inf" ? INFINITY : std::strtof(bias.c_str(), &end);
    const bool bias_ok = bias == "inf" || (!bias.empty() && end && *end == '\0' && std::isfinite(b));
    if (!id_ok || !bias_ok || (v[at] == '+' && bias == "inf"))
        fail(
            "--logit-bias '%s': expected TOKEN_ID+BIAS or TOKEN_ID-BIAS, e.g. 15043+1.5, or 15043-inf to ban the "
            "token",
            v.c_str());
    return {(int32_t)tok, v[at] == '-' ? -b : b};
}

// "\n", "\t", "\"" and "\\" in a command-line string, as llama.cpp reads --dry-sequence-breaker.
std::string unescape_arg(const std::string& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); i++) {
        if (v[i] != '\\' || i + 1 == v.size()) {
            out += v[i];
            continue;
        }
        const char c = v[++i];
        out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    }
    return out;
}

void add_sampling_options(ArgParser& p, SamplingParams& s) {
    p.u64("-s,--seed", &s.seed, "RNG seed (-1: random) [-1]");
    p.f32("--temp,--temperature", &s.temp, "temperature (0: greedy) [0.8]", 0.0f, 100.0f);
    p.i32("--top-k", &s.top_k, "top-k (0: off) [40]", 0, INT32_MAX);
    p.f32("--top-p", &s.top_p, "top-p (1: off) [0.95]", 0.0f, 1.0f);
    p.f32("--min-p", &s.min_p, "min-p (0: off) [0.05]", 0.0f, 1.0f);
    p.f32("--repeat-penalty", &s.repeat_penalty, "repetition penalty (1: off) [1.0]", 0.0f, 100.0f);
    p.i32("--repeat-last-n", &s.repeat_last_n, "penalty window (0: off, -1: context) [64]", -1, INT32_MAX);
    p.f32("--presence-penalty", &s.presence_penalty, "presence penalty (0: off) [0]", -100.0f, 100.0f);
    p.f32("--frequency-penalty", &s.frequency_penalty, "frequency penalty (0: off) [0]", -100.0f, 100.0f);
    p.custom("-l,--logit-bias", "ID(+|-)BIAS", "add BIAS to token ID's logit, e.g. 15043+1 or 15043-inf (repeatable)",
             [&s](const std::string& v) { s.logit_bias.push_back(parse_logit_bias_arg(v)); });
    p.f32("--top-nsigma,--top-n-sigma", &s.top_n_sigma, "top-n-sigma (-1: off) [-1]", -1.0f, 1e6f);
    p.f32("--typical,--typical-p", &s.typical_p, "locally typical sampling p (1: off) [1]", 0.0f, 1.0f);
    p.f32("--xtc-probability", &s.xtc_probability, "XTC: chance to exclude the top choices (0: off) [0]", 0.0f, 1.0f);
    p.f32("--xtc-threshold", &s.xtc_threshold, "XTC: probability a top choice needs (> 0.5: off) [0.1]", 0.0f, 1.0f);
    p.f32("--dynatemp-range", &s.dynatemp_range, "dynamic temperature range (0: off) [0]", 0.0f, 100.0f);
    p.f32("--dynatemp-exp", &s.dynatemp_exponent, "dynamic temperature exponent [1]", 1e-6f, 100.0f);
    p.i32("--min-keep", &s.min_keep, "tokens every filter keeps at least (0: 1) [0]", 0, INT32_MAX);
    p.i32("--mirostat", &s.mirostat, "Mirostat: 0 off, 1 Mirostat, 2 Mirostat 2.0 (replaces top-k/top-p/min-p/...) [0]",
          0, 2);
    p.f32("--mirostat-ent", &s.mirostat_tau, "Mirostat target surprise tau, bits [5.0]", 1e-6f, 100.0f);
    p.f32("--mirostat-lr", &s.mirostat_eta, "Mirostat learning rate eta [0.1]", 0.0f, 10.0f);
    p.f32("--dry-multiplier", &s.dry_multiplier, "DRY: penalty multiplier (0: off) [0]", 0.0f, 1e6f);
    p.f32("--dry-base", &s.dry_base, "DRY: penalty base, >= 1 [1.75]", 1.0f, 1e6f);
    p.i32("--dry-allowed-length", &s.dry_allowed_length, "DRY: repeats this long go unpenalized [2]", 0, INT32_MAX);
    p.i32("--dry-penalty-last-n", &s.dry_penalty_last_n, "DRY: tokens looked back over (-1: all, 0: off) [-1]", -1,
          INT32_MAX);
    auto breakers_given = std::make_shared<bool>(false);
    p.custom("--dry-sequence-breaker", "STRING",
             "DRY: text that ends a repeat, escapes \\n \\t \\\" \\\\ (repeatable; the first replaces the "
             "defaults \\n : \" *; 'none': no breakers)",
             [&s, breakers_given](const std::string& v) {
                 if (!*breakers_given) s.dry_sequence_breakers.clear();
                 *breakers_given = true;
                 if (v == "none") {
                     s.dry_sequence_breakers.clear();
                     return;
                 }
                 const std::string text = unescape_arg(v);
                 if (text.empty()) fail("--dry-sequence-breaker: give a non-empty string (or 'none')");
                 s.dry_sequence_breakers.push_back(text);
             });
    p.custom("--samplers", "LIST",
             "sampler order, ';'-separated: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature "
             "[that order]",
             [&s](const std::string& v) { s.order = parse_sampler_order(v); });
    p.custom("--sampling-seq,--sampler-seq", "LETTERS",
             "sampler order, one letter per step: e penalties, d dry, s top_n_sigma, k top_k, y typ_p, p top_p, "
             "m min_p, x xtc, t temperature [edskypmxt]",
             [&s](const std::string& v) {
                 if (v.find(';') != std::string::npos) fail("--sampling-seq '%s': give letters, e.g. kt", v.c_str());
                 s.order = parse_sampler_order(v);
             });
    add_compat_options(p, kCompatGen);
}

SamplingParams with_vocab(SamplingParams s, const Model& m) {
    const Tokenizer& tok = m.tokenizer();
    bind_dry_breakers(s, [&tok](int32_t id) { return tok.token_to_piece(id, false); });
    return s;
}

EngineParams engine_params(const ModelOptions& o) {
    EngineParams ep;
    ep.n_ctx = o.n_ctx;
    ep.n_ubatch = std::min(o.n_ubatch, o.n_batch);
    ep.n_threads = o.n_threads;
    ep.type_k = o.type_k;
    ep.type_v = o.type_v;
    ep.kv_auto_asymmetric = o.kv_auto_asymmetric;
    ep.kv_rotate = o.kv_rotate;
    ep.kv_boundary_layers = o.kv_boundary_layers;
    ep.offload = o.offload;
    ep.lora = o.lora;
    ep.lora_init_without_apply = o.lora_init_without_apply;
    return ep;
}

}  // namespace bee
