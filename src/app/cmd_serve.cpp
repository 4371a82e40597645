// app/cmd_serve: `bee serve` — the OpenAI-compatible HTTP server (llama-server's flag names). Options
// for the server, slots and reasoning are defined here; model and sampling groups come from app/args.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <pthread.h>

#include "app/args.h"
#include "app/args_compat.h"
#include "app/args_spec.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "chat/builtin_templates.h"
#include "sample/grammar.h"
#include "sample/json_schema.h"
#include "server/mcp_tools.h"
#include "server/model_presets.h"
#include "server/model_router.h"
#include "server/server.h"
#include "server/tools_builtin.h"

namespace bee {

namespace {

struct ServeOptions {
    ModelOptions model;
    SpecOptions spec;
    server::ServerParams srv;
    int32_t n_parallel = -1;
    int32_t cache_ram_mib = 8192;
    int32_t ctx_checkpoints = 32;
    int32_t checkpoint_every = 8192;
    bool kv_unified = false, no_kv_unified = false, cache_prompt = true;
    bool cors_origins_given = false;  // --cors-origins: else --tools narrows CORS to localhost
    bool jinja = false, cont_batching = false, no_cont_batching = false, no_context_shift = false;
    std::string api_key, api_key_file, chat_template, chat_template_file, chat_template_kwargs;
    std::string reasoning_format = "auto", loop_guard = "force-close";
    std::string grammar, grammar_file, json_schema, json_schema_file;
    // --reasoning, --reasoning-effort, --reasoning-preserve; enable_thinking is true unless --reasoning off,
    // as llama-server renders templates (those testing `not enable_thinking` leave the think block open)
    chat::Json reasoning_kwargs = chat::Json{{"enable_thinking", true}};
    server::RouterParams router;  // --models-dir, --models-preset, --models-max
    // --mcp-servers-config / --mcp-servers-json, read at start-up
    std::vector<server::McpServerConfig> mcp_servers;
};

// --reasoning on|off (auto is handled by the caller).
bool parse_on_off_auto(const std::string& v, const char* flag) {
    if (v == "on" || v == "1" || v == "true" || v == "enabled") return true;
    if (v == "off" || v == "0" || v == "false" || v == "disabled") return false;
    fail("invalid value '%s' for %s: expected on, off or auto", v.c_str(), flag);
}

void add_server_options(ArgParser& p, ServeOptions& o) {
    server::ServerParams& s = o.srv;
    p.str("--host", &s.host, "HOST", "address to listen on [127.0.0.1]");
    p.i32("--port", &s.port, "port to listen on [8080]", 0, 65535);
    p.str("--api-key", &o.api_key, "KEY[,KEY...]", "require one of these keys (Authorization: Bearer or X-Api-Key)");
    p.str("--api-key-file", &o.api_key_file, "FILE", "file with one API key per line");
    p.i32("--threads-http", &s.threads_http, "most HTTP threads, one per open connection (-1: 1024) [-1]", -1, 4096);
    p.i32("-to,--timeout", &s.timeout_s, "write timeout in seconds (reads: 5 s idle, headers 10 s, body 60 s) [600]", 1,
          86400);
    p.custom("--cors-origins", "LIST",
             "browser origins allowed, comma list; * any origin; localhost: any origin on this machine [*]",
             [&o](const std::string& v) {
                 o.srv.cors_origins = server::split_list(v);
                 o.cors_origins_given = true;
             });
    p.flag("--cors-credentials", &s.cors_credentials,
           "allowed origins get Access-Control-Allow-Credentials: true (llama-server's default) [on]");
    p.action("--no-cors-credentials", "never Access-Control-Allow-Credentials (Bee has no cookie or HTTP auth)",
             [&s] { s.cors_credentials = false; });
    p.custom("--max-body-bytes", "N", "largest request body accepted [16777216]", [&s](const std::string& v) {
        char* end = nullptr;
        const long long x = strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end || x < 1024)
            fail("invalid value '%s' for --max-body-bytes: an integer >= 1024", v.c_str());
        s.max_body_bytes = (size_t)x;
    });
    p.flag("--metrics", &s.metrics, "enable GET /metrics (Prometheus)");
    p.action("--slots", "enable GET /slots (the default)", [&s] { s.slots = true; });
    p.action("--no-slots", "disable GET /slots", [&s] { s.slots = false; });
    p.action("--ui,--webui", "serve the chat page at / (the default)", [&s] { s.webui = true; });
    p.action("--no-ui,--no-webui", "no chat page (/ answers 404)", [&s] { s.webui = false; });
    p.action("--ui-mcp-proxy,--webui-mcp-proxy",
             "experimental: GET/POST /cors-proxy?url=http://..., the chat page's way to MCP servers a browser cannot "
             "reach; do not enable on untrusted networks [off]",
             [&s] { s.ui_mcp_proxy = true; });
    p.action("--no-ui-mcp-proxy,--no-webui-mcp-proxy", "no /cors-proxy: it answers 403 (the default)",
             [&s] { s.ui_mcp_proxy = false; });
    p.str("--mcp-servers-config", &s.mcp_servers_config, "FILE",
          "experimental: MCP servers run as child processes, a Cursor-style JSON file {\"mcpServers\": {NAME: "
          "{\"command\", \"args\", \"env\", \"cwd\", \"timeout_ms\"}}}; their tools are served by GET/POST /tools "
          "as NAME_TOOL (--cors-origins then defaults to localhost); only commands you trust");
    p.str("--mcp-servers-json", &s.mcp_servers_json, "JSON", "experimental: the same as --mcp-servers-config, inline");
    p.str("--slot-save-path", &s.slot_save_path, "DIR",
          "enable POST /slots/ID?action=save|restore|erase, files in DIR");
    p.str("-a,--alias", &s.alias, "NAMES",
          "model names reported by the API, a comma list: the id is the first in sorted order "
          "(default: the file name)");
    p.str("--tags", &s.tags, "TAGS", "model tags reported by /v1/models, a comma list");
    p.flag("--embedding,--embeddings", &s.embedding,
           "serve /v1/embeddings, /embedding and /embeddings (any model; "
           "completions keep working)");
    p.flag("--rerank,--reranking", &s.reranking,
           "serve /rerank (/v1/rerank): needs a model with a classification "
           "head; implies --embedding --pooling rank");
    p.custom("--pooling", "none|mean|cls|last|rank",
             "how embeddings pool the tokens' final hidden states [the "
             "model's, else none]",
             [&s](const std::string& v) { s.pooling = parse_pooling(v, "--pooling"); });
    p.i32("--embd-normalize", &s.embd_normalize,
          "default embd_normalize of pooled embeddings: -1 none, 0 max "
          "absolute, 1 taxicab, 2 Euclidean, >2 p-norm [2]",
          -1, 64);
    p.custom("--tools", "TOOL[,TOOL...]",
             "built-in agent tools for clients (POST /tools): all, or some of read_file, file_glob_search, "
             "grep_search, exec_shell_command, write_file, edit_file, get_info. They read and write files and run "
             "commands as this user for anyone who can reach the server: never on an untrusted network; "
             "CORS becomes localhost-only unless --cors-origins is given [none]",
             [&s](const std::string& v) { s.tools = server::split_list(v); });
    p.str("--tools-runtime", &s.tools_runtime, "SPEC",
          "where the tools run: docker:IMAGE / podman:IMAGE (a container started now, removed at exit), "
          "docker-container:ID / podman-container:ID (a running one), ssh:USER@HOST (key auth, known host) "
          "[this machine]");
    p.action("-ag,--agent", "--tools all and the chat page's MCP CORS proxy (same warning as --tools)", [&s] {
        s.tools = {"all"};
        s.ui_mcp_proxy = true;
    });
    p.action("-no-ag,--no-agent", "no agent tools and no MCP CORS proxy (the default)", [&s] {
        s.tools.clear();
        s.ui_mcp_proxy = false;
    });
    p.custom("--sleep-idle-seconds", "SECONDS",
             "after this many seconds without requests, free the model and KV cache until the next request "
             "(/health, GET /props, /models and /metrics do not wake it; -1: never) [-1]",
             [&s](const std::string& v) {
                 char* end = nullptr;
                 const long x = strtol(v.c_str(), &end, 10);
                 if (v.empty() || *end || x == 0 || x < -1 || x > INT32_MAX)
                     fail("invalid value '%s' for --sleep-idle-seconds: a number of seconds >= 1, or -1 (never)",
                          v.c_str());
                 s.sleep_idle_seconds = (int32_t)x;
             });
    p.i32("-n,--predict,--n-predict", &s.n_predict, "default max tokens per request (-1: no limit) [-1]", -1,
          INT32_MAX);
}

void add_slot_options(ArgParser& p, ServeOptions& o) {
    p.i32("-np,--parallel", &o.n_parallel, "slots (parallel sequences); -1: 4 with a unified KV cache [-1]", -1, 64);
    p.flag("-kvu,--kv-unified", &o.kv_unified, "all slots share the whole context");
    p.flag("-no-kvu,--no-kv-unified", &o.no_kv_unified, "split the context evenly across slots");
    p.flag("-cb,--cont-batching", &o.cont_batching, "continuous batching (always on)");
    p.flag("-nocb,--no-cont-batching", &o.no_cont_batching, "not supported: batching is always continuous");
    p.action("--cache-prompt", "reuse cached prompt prefixes by default (the default)",
             [&o] { o.cache_prompt = true; });
    p.action("--no-cache-prompt", "do not reuse cached prompt prefixes by default", [&o] { o.cache_prompt = false; });
    p.i32("--keep", &o.srv.n_keep, "default n_keep: prompt tokens a context shift keeps (-1: all) [0]", -1, INT32_MAX);
    p.i32("--cache-reuse", &o.srv.n_cache_reuse,
          "also reuse cached chunks of at least N tokens found later in the prompt (KV shift; 0: off) [0]", 0,
          INT32_MAX);
    p.flag("--context-shift", &o.srv.sched.context_shift,
           "a slot that fills its context drops tokens after the request's n_keep (n_discard of them, default half "
           "the rest) and goes on, instead of stopping with truncated: true [off]");
    p.flag("--no-context-shift", &o.no_context_shift, "the default: a full slot stops");
    p.i32("-cram,--cache-ram", &o.cache_ram_mib, "host-RAM prompt cache in MiB (0: off, -1: no limit) [8192]", -1,
          INT32_MAX);
    p.i32("-ctxcp,--ctx-checkpoints,--swa-checkpoints", &o.ctx_checkpoints,
          "models with recurrent layers (qwen35): recurrent-state checkpoints kept per slot, near each prompt's end "
          "and every --checkpoint-every-n-tokens, so a later prompt sharing a prefix restarts from the nearest one "
          "(0: none). Attention KV needs none: any cached prefix is kept [32]",
          0, INT32_MAX);
    p.i32("-cpent,--checkpoint-every-n-tokens", &o.checkpoint_every,
          "models with recurrent layers: also a checkpoint at the first batch start this many positions past the "
          "last one (-1: only near prompt ends) [8192]",
          -1, INT32_MAX);
    p.f32("-sps,--slot-prompt-similarity", &o.srv.sched.slot_prompt_similarity,
          "cached-prefix share of a prompt above which its slot is preferred [0.10]", 0.0f, 1.0f);
}

void add_chat_options(ArgParser& p, ServeOptions& o) {
    server::ServerParams& s = o.srv;
    p.flag("--jinja", &o.jinja, "use Jinja chat templates (always on)");
    p.str("--chat-template", &o.chat_template, "NAME|JINJA",
          "chat template: Jinja source or a built-in name (llama.cpp's: chatml, llama3, gemma, mistral-v7, ...; an "
          "unknown name lists them) [from the model]");
    p.str("--chat-template-file", &o.chat_template_file, "FILE", "read the chat template from a file");
    p.str("--chat-template-kwargs", &o.chat_template_kwargs, "JSON",
          "extra template variables, e.g. {\"enable_thinking\":false}");
    p.custom("-rea,--reasoning", "on|off|auto",
             "thinking in chat templates: enable_thinking true / false; auto: true, as "
             "llama-server gives templates (a request's chat_template_kwargs wins) [auto]",
             [&o](const std::string& v) {
                 o.reasoning_kwargs["enable_thinking"] = v == "auto" || parse_on_off_auto(v, "--reasoning");
             });
    p.custom("--reasoning-effort", "LEVEL", "reasoning_effort given to the chat template (default: the template's)",
             [&o](const std::string& v) {
                 if (v == "default") o.reasoning_kwargs.erase("reasoning_effort");
                 else o.reasoning_kwargs["reasoning_effort"] = v;
             });
    p.action("--reasoning-preserve", "preserve_reasoning: true for the chat template",
             [&o] { o.reasoning_kwargs["preserve_reasoning"] = true; });
    p.action("--no-reasoning-preserve", "preserve_reasoning: false for the chat template",
             [&o] { o.reasoning_kwargs["preserve_reasoning"] = false; });
    p.str("--reasoning-format", &o.reasoning_format, "FORMAT", "none, auto, deepseek, deepseek-legacy [auto]");
    p.i32("--reasoning-budget", &s.reasoning_budget, "reasoning tokens before </think> is forced (-1: unlimited) [-1]",
          -1, INT32_MAX);
    p.str("--reasoning-budget-message", &s.reasoning_budget_message, "TEXT", "text injected before the forced end tag");
    p.str("--reasoning-loop-guard", &o.loop_guard, "MODE", "off, force-close, stop [force-close]");
    chat::LoopGuardParams& g = s.loop_guard;
    p.i32("--reasoning-loop-min-tokens", &g.min_tokens, "reasoning tokens before checking [1024]", 1, INT32_MAX);
    p.i32("--reasoning-loop-window", &g.window, "tokens kept per region [2048]", 1, INT32_MAX);
    p.i32("--reasoning-loop-max-period", &g.max_period, "longest period looked for [512]", 1, INT32_MAX);
    p.i32("--reasoning-loop-min-coverage", &g.min_coverage, "tokens a repetition must cover [768]", 1, INT32_MAX);
    p.i32("--reasoning-loop-check-interval", &g.check_interval, "check every N tokens [32]", 1, INT32_MAX);
    p.i32("--reasoning-loop-interventions", &g.interventions, "force-closes before stopping [1]", 1, INT32_MAX);
}

// Defaults of request fields that llama-server takes from its command line.
void add_request_default_options(ArgParser& p, ServeOptions& o) {
    server::ServerParams& s = o.srv;
    p.flag("--ignore-eos", &s.ignore_eos, "default ignore_eos: generate past end-of-generation tokens");
    p.flag("-sp,--special", &s.special, "render control tokens in the generated text");
    p.str("--grammar", &o.grammar, "GBNF", "grammar for requests that give no grammar, schema or response_format");
    p.str("--grammar-file", &o.grammar_file, "FILE", "read --grammar from a file");
    p.str("-j,--json-schema", &o.json_schema, "SCHEMA", "JSON schema for requests that give no constraint");
    p.str("-jf,--json-schema-file", &o.json_schema_file, "FILE", "read --json-schema from a file");
}

void add_router_options(ArgParser& p, ServeOptions& o) {
    server::RouterParams& r = o.router;
    p.str("--models-dir", &r.models_dir, "DIR",
          "router mode (no -m): serve every .gguf in DIR (or DIR/NAME/*.gguf), each loaded on demand by the request's "
          "model field");
    p.str("--models-preset", &r.models_preset, "FILE",
          "router mode: models and their flags from an INI file in llama-server's preset format");
    p.i32("--models-max", &r.models_max,
          "router mode: most models loaded at once, least recently used unloaded "
          "first (0: no limit) [4]",
          0, 1024);
    p.action("--models-autoload", "router mode: a request for a model that is not loaded loads it (the default)",
             [&r] { r.autoload = true; });
    p.action("--no-models-autoload", "router mode: models load only by POST /models/load",
             [&r] { r.autoload = false; });
}

// Every `bee serve` flag, on `p`, writing into `o`.
void add_serve_options(ArgParser& p, ServeOptions& o) {
    add_model_options(p, o.model);
    add_sampling_options(p, o.srv.sampling);
    add_spec_options(p, o.spec);
    add_server_options(p, o);
    add_slot_options(p, o);
    add_chat_options(p, o);
    add_request_default_options(p, o);
    add_router_options(p, o);
    add_compat_options(p, kCompatServer);
}

bool router_mode(const ServeOptions& o) {
    return o.model.model.empty() && (!o.router.models_dir.empty() || !o.router.models_preset.empty());
}

// --grammar / --json-schema (or their files) as one GBNF text, checked now rather than per request.
std::string default_grammar(const ServeOptions& o) {
    const int given =
        !o.grammar.empty() + !o.grammar_file.empty() + !o.json_schema.empty() + !o.json_schema_file.empty();
    if (given > 1) fail("give one of --grammar, --grammar-file, --json-schema, --json-schema-file");
    std::string gbnf = !o.grammar_file.empty() ? read_file(o.grammar_file) : o.grammar;
    const std::string schema = !o.json_schema_file.empty() ? read_file(o.json_schema_file) : o.json_schema;
    if (!schema.empty()) {
        try {
            gbnf = json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
        } catch (const std::exception& e) {
            fail("--json-schema: %s", e.what());
        }
    }
    if (!gbnf.empty()) Grammar::parse(gbnf);  // throws with the position of a bad rule
    return gbnf;
}

// Turns the parsed flags into the server's parameters (files read, names checked).
void finish_options(ServeOptions& o) {
    server::ServerParams& s = o.srv;
    if (o.model.model.empty() && !router_mode(o))
        fail("no model given (use -m FILE, or --models-dir DIR / --models-preset FILE for router mode)");
    s.model_path = o.model.model;
    s.verbose = log_level() == LogLevel::debug;  // -v: every OpenAI reply carries __verbose, as in llama-server
    s.api_keys = server::split_list(o.api_key, false);
    if (!o.api_key_file.empty()) {  // one key per line
        std::string text = read_file(o.api_key_file);
        for (char& c : text)
            if (c == '\n' || c == '\r') c = ',';
        for (const std::string& key : server::split_list(text, false)) s.api_keys.push_back(key);
    }
    if (o.no_cont_batching) fail("-nocb/--no-cont-batching is not supported: Bee always batches continuously");
    s.cache_prompt = o.cache_prompt;
    s.load = o.model.load;
    s.grammar = default_grammar(o);
    if (o.no_context_shift) s.sched.context_shift = false;
    s.sched.n_parallel = o.n_parallel < 0 ? 4 : o.n_parallel;
    s.sched.kv_unified = o.kv_unified || (o.n_parallel < 0 && !o.no_kv_unified);
    s.sched.n_batch = o.model.n_batch;
    s.sched.cache_ram_bytes = o.cache_ram_mib < 0 ? SIZE_MAX : (size_t)o.cache_ram_mib << 20;
    s.chat_template =
        chat::select_template(o.chat_template_file, o.chat_template, "", o.jinja);  // "": the model's, once loaded
    if (!o.chat_template_kwargs.empty()) {
        try {
            s.chat_template_kwargs = chat::Json::parse(o.chat_template_kwargs);
        } catch (const std::exception& e) {
            fail("--chat-template-kwargs: not valid JSON: %s", e.what());
        }
        if (!s.chat_template_kwargs.is_object()) fail("--chat-template-kwargs must be a JSON object");
    }
    for (const auto& [key, value] : o.reasoning_kwargs.items())  // --chat-template-kwargs wins over them
        if (!s.chat_template_kwargs.contains(key)) s.chat_template_kwargs[key] = value;
    // Speculative decoding per slot; a draft model (-md) gets its own engine per slot, sized like a slot.
    const int32_t n_ctx_slot = s.sched.kv_unified ? o.model.n_ctx : o.model.n_ctx / std::max(1, s.sched.n_parallel);
    if (!router_mode(o)) finish_spec_options(o.spec, n_ctx_slot, o.model.n_threads);
    s.sched.spec = o.spec.params;
    s.reasoning_format = server::parse_reasoning_format(o.reasoning_format, "--reasoning-format");
    s.loop_guard.mode = chat::parse_loop_guard_mode(o.loop_guard, "--reasoning-loop-guard");
    s.loop_guard.validate("--reasoning-loop-*");
    server::check_builtin_tool_names(s.tools);
    if (!s.tools.empty() && !o.cors_origins_given) s.cors_origins = {"localhost"};  // as llama-server
}

// --tools: the built-in tools in the server's registry (and the --tools-runtime container started), with
// a warning naming them: they act as this user for any client.
void setup_tools(server::ServerContext& ctx) {
    const server::ServerParams& s = ctx.params;
    if (s.tools.empty()) {
        if (!s.tools_runtime.empty()) BEE_LOG_WARN("--tools-runtime has no effect without --tools (or --agent)");
        return;
    }
    ctx.tools.add(server::make_builtin_tools(s.tools, s.tools_runtime));
    auto join = [](const std::vector<std::string>& v) {
        std::string out;
        for (const std::string& x : v) out += (out.empty() ? "" : ",") + x;
        return out;
    };
    const std::string where = s.tools_runtime.empty() ? "on this machine" : "in " + s.tools_runtime;
    BEE_LOG_WARN(
        "agent tools enabled (--tools %s): any client that reaches this server can read and write files "
        "and run commands as this user %s; CORS origins: %s",
        join(s.tools).c_str(), where.c_str(), s.cors_origins.empty() ? "any" : join(s.cors_origins).c_str());
}

// The engine settings of the slots and KV cache the options ask for.
EngineParams serve_engine_params(const ServeOptions& o) {
    EngineParams ep = engine_params(o.model);
    ep.n_seq_max = o.srv.sched.n_parallel;
    ep.kv_split = !o.srv.sched.kv_unified;  // a slot's cells stay contiguous
    // Bee's cache keeps every cell of sliding-window layers (like --swa-full), so only recurrent state needs
    // llama.cpp's checkpoints (model/recurrent_state.h).
    ep.ctx_checkpoints = o.ctx_checkpoints;
    ep.checkpoint_every_n = o.checkpoint_every == 0 ? -1 : o.checkpoint_every;
    return ep;
}

// Router mode: one model's flags (from its sources and the router's command line) as its settings.
server::ModelConfig parse_model_config(const std::vector<std::string>& args) {
    ServeOptions o;
    ArgParser p("bee serve", "");
    add_serve_options(p, o);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    if (!p.parse((int)argv.size(), argv.data())) fail("--help is not a model flag");
    finish_options(o);
    return {o.srv, serve_engine_params(o)};
}

// The router's command line less the flags that are the router's own (the model list, the name a model
// answers to, the keys): what every model gets on top of its preset.
std::vector<std::string> model_base_args(const ArgParser& p, int argc, char** argv) {
    static const char* kRouterOnly[] =
        {"--models-dir", "--models-preset", "--models-max", "--models-autoload", "--no-models-autoload",
         "-a",           "--alias",         "--api-key",    "--api-key-file"};
    std::vector<std::string> out;
    for (int i = 0; i < argc; i++) {
        std::string a = argv[i];
        const size_t eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
        const std::string name = eq == std::string::npos ? a : a.substr(0, eq);
        bool takes_value = false;
        const bool known = p.has(name, &takes_value);
        const bool value_next = known && takes_value && eq == std::string::npos && i + 1 < argc;
        const bool router_only =
            std::any_of(std::begin(kRouterOnly), std::end(kRouterOnly), [&](const char* r) { return name == r; });
        if (!router_only) {
            out.push_back(a);
            if (value_next) out.push_back(argv[i + 1]);
        }
        if (value_next) i++;
    }
    return out;
}

// The flags that let clients act on this machine: the configuration read now (bad files and JSON are
// start-up errors), and --cors-origins then limited to localhost unless it was given, as llama-server.
void read_agent_options(ServeOptions& o) {
    server::ServerParams& s = o.srv;
    o.mcp_servers = server::load_mcp_servers(s.mcp_servers_config, s.mcp_servers_json);
    const bool mcp = !s.mcp_servers_config.empty() || !s.mcp_servers_json.empty();
    if (mcp && !o.cors_origins_given) {
        s.cors_origins = {"localhost"};
        BEE_LOG_WARN(
            "MCP servers are configured: --cors-origins defaults to localhost (only pages served from this "
            "machine may call the server; give --cors-origins to change it)");
    }
}

// Starts the MCP servers (their tools listed before the server listens) and says what is exposed.
void start_agent_features(ServeOptions& o, server::ServerContext& ctx) {
    std::string on;
    if (!o.mcp_servers.empty()) {
        // note: after the built-in tools (--tools), whose names MCP tools must not take
        const server::ToolRegistry& reg = ctx.tools;
        ctx.tools.add(server::start_mcp_tools(std::move(o.mcp_servers),
                                              [&reg](const std::string& n) { return reg.find(n) != nullptr; }));
        on += "MCP servers (GET/POST /tools)";
    }
    if (ctx.params.ui_mcp_proxy) on += std::string(on.empty() ? "" : ", ") + "the CORS proxy (/cors-proxy)";
    if (!on.empty())
        BEE_LOG_WARN("experimental features on: %s; do not expose this server to untrusted networks", on.c_str());
}

// Router mode: the server answers at once; each model loads when first asked for (or at start-up).
int serve_router(ServeOptions& o, const ArgParser& p, int argc, char** argv, const sigset_t& sigs) {
    o.router.base_args = model_base_args(p, argc, argv);
    server::ServerContext ctx;
    ctx.params = o.srv;
    ctx.created = (int64_t)time(nullptr);
    ctx.ready = true;
    try {
        setup_tools(ctx);
        server::ModelRouter router(
            o.router, [&p](const std::string& flag, bool* takes_value) { return p.has(flag, takes_value); },
            parse_model_config);
        start_agent_features(o, ctx);
        server::HttpServer http(ctx, &router);
        http.start();
        if (o.model.mlock) lock_model_memory();
        router.load_startup_models();
        const server::ServerParams& s = ctx.params;
        printf("router mode: listening on http://%s:%d\n", s.host.c_str(), s.port);
        fflush(stdout);
        int sig = 0;
        sigwait(&sigs, &sig);
        BEE_LOG_INFO("signal %d: shutting down", sig);
        router.shutdown();  // waiting handlers get their error and return
        ctx.tools.shutdown();
        http.stop();
        return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace

int cmd_serve(int argc, char** argv) {
    ServeOptions o;
    ArgParser p("bee serve", "OpenAI-compatible HTTP server (llama-server flags).");
    add_serve_options(p, o);
    try {
        if (!p.parse(argc, argv)) return 0;
        finish_options(o);
        read_agent_options(o);
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    if (!o.model.model.empty() && (!o.router.models_dir.empty() || !o.router.models_preset.empty()))
        BEE_LOG_WARN("-m given: serving that one model (--models-dir / --models-preset apply without -m)");
    // SIGINT/SIGTERM are taken by sigwait below; every thread started from here inherits the mask.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
    if (router_mode(o)) return serve_router(o, p, argc, argv, sigs);

    server::ServerContext ctx;
    ctx.params = o.srv;
    ctx.created = (int64_t)time(nullptr);
    try {
        setup_tools(ctx);
        start_agent_features(o, ctx);  // after the built-in tools: an MCP tool of the same name is left out
        server::HttpServer http(ctx);
        http.start();  // answers 503 "Loading model" until the model is ready
        server::load_server_context(ctx, serve_engine_params(o));
        if (o.model.mlock) lock_model_memory();
        const server::ServerParams& s = ctx.params;
        printf("listening on http://%s:%d\nchat page: http://%s:%d/\n", s.host.c_str(), s.port, s.host.c_str(), s.port);
        fflush(stdout);
        int sig = 0;
        sigwait(&sigs, &sig);
        BEE_LOG_INFO("signal %d: shutting down", sig);
        ctx.shutdown();  // waiting handlers get their error and return
        ctx.tools.shutdown();
        http.stop();
        return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace bee
