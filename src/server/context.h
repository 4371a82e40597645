// server/context: what every route handler shares — the server's parameters, the loaded model, the
// engine and scheduler, the chat template — and whether loading has finished.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chat/loop_guard.h"
#include "chat/template.h"
#include "model/engine.h"
#include "model/model.h"
#include "model/pooling.h"
#include "runtime/scheduler.h"
#include "sample/sampler.h"
#include "server/stream_sessions.h"
#include "server/tools.h"

namespace bee::server {

using namespace bee::runtime;  // the server speaks the runtime's task and slot types

enum class ReasoningFormat { none, auto_, deepseek, deepseek_legacy };
// "none" | "auto" | "deepseek" | "deepseek-legacy"; throws bee::Error naming `where` otherwise.
ReasoningFormat parse_reasoning_format(const std::string& text, const char* where);

struct ServerParams {
    std::string host = "127.0.0.1";
    int32_t port = 8080;
    std::vector<std::string> api_keys;      // empty: no authentication
    int32_t threads_http = -1;              // most HTTP worker threads (-1: 1024; they grow with the connections)
    int32_t timeout_s = 600;                // write timeout per connection (reads: see ConnLimits)
    std::vector<std::string> cors_origins;  // --cors-origins: empty: any origin
    bool cors_credentials = true;           // --cors-credentials: allowed origins may send credentials
    size_t max_body_bytes = 16u << 20;      // larger request bodies get 413
    bool metrics = false;                   // GET /metrics
    bool slots = true;                      // GET /slots
    bool webui = true;                      // GET / and /index.html: the chat page
    std::string slot_save_path;             // --slot-save-path: directory of slot files (empty: actions get 501)
    std::string alias;                      // -a: model names, a comma list (default: the file name)
    std::string tags;                       // --tags: a comma list reported by /v1/models
    std::string model_path;
    ModelLoadParams load;     // --override-kv, --rope-*, --check-tensors
    int32_t n_predict = -1;   // server-wide default max tokens
    SamplingParams sampling;  // defaults for requests
    bool ignore_eos = false;  // --ignore-eos: default of the request field
    int32_t n_keep = 0;       // --keep: default of the request field
    bool special = false;     // -sp: control tokens are rendered in the generated text
    std::string grammar;      // --grammar / --json-schema: GBNF for requests without a constraint
    bool cache_prompt = true;
    bool verbose = false;       // default of the request field `verbose` (OpenAI replies carry `__verbose`); -v sets it
    int32_t n_cache_reuse = 0;  // --cache-reuse
    SchedulerParams sched;
    int32_t sleep_idle_seconds = -1;  // --sleep-idle-seconds: free the model after this long idle (-1: never)
    std::string chat_template;        // a built-in name or Jinja source overriding the model's (empty: the model's)
    chat::Json chat_template_kwargs = chat::Json::object();
    ReasoningFormat reasoning_format = ReasoningFormat::auto_;
    int32_t reasoning_budget = -1;
    std::string reasoning_budget_message;
    chat::LoopGuardParams loop_guard;
    bool embedding = false;                  // --embedding: /v1/embeddings, /embedding, /embeddings
    bool reranking = false;                  // --reranking, or --embedding --pooling rank: /rerank too
    Pooling pooling = Pooling::unspecified;  // --pooling; unspecified: the model's, else none (set at load)
    int32_t embd_normalize = 2;              // --embd-normalize: default of the request field (2: Euclidean)
    std::vector<std::string> tools;          // --tools / --agent: built-in agent tools, "all" or names (none: off)
    std::string tools_runtime;               // --tools-runtime: where they run (empty: this machine)
    bool ui_mcp_proxy = false;               // --ui-mcp-proxy / --agent: GET/POST /cors-proxy (server/cors_proxy.h)
    std::string mcp_servers_config;          // --mcp-servers-config: a Cursor-style JSON file (server/mcp_tools.h)
    std::string mcp_servers_json;            // --mcp-servers-json: the same JSON inline
};

class IdleSleep;

struct ServerContext {
    ServerContext();
    ~ServerContext();  // stops the idle-sleep watcher before the model goes

    ServerParams params;
    EngineParams engine_params;  // what the engine was built with (reloaded with after sleeping)
    std::atomic<bool> ready{false};
    std::unique_ptr<Model> model;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<Scheduler> scheduler;
    std::unique_ptr<chat::Template> tmpl;    // the model's, the flag's, or a built-in one
    std::string tmpl_source;                 // Jinja source, or the built-in format's name
    std::string model_name;                  // the first of model_aliases in sorted order, as llama-server
    std::vector<std::string> model_aliases;  // -a's names, sorted and without repeats
    std::vector<std::string> model_tags;     // --tags, sorted and without repeats
    int64_t created = 0;                     // unix seconds at start
    std::atomic<uint64_t> next_task_id{1};
    ToolRegistry tools;  // --tools, --mcp-servers-*: GET/POST /tools (server/tools.h); one per server
    // --sleep-idle-seconds (server/idle_sleep.h): set once loading is done. model, engine and scheduler are
    // null while the server sleeps: a handler that uses them holds sleep->hold() (register_model_routes).
    std::unique_ptr<IdleSleep> sleep;
    // X-Conversation-Id's resumable streams (server/stream_sessions); shared with the readers' responses
    std::shared_ptr<StreamSessions> streams = std::make_shared<StreamSessions>();

    // Stops for good: no more wake-ups, the scheduler's waiting requests get their error.
    void shutdown();

    const Tokenizer& tokenizer() const { return model->tokenizer(); }

    // The LoRA scales of requests without a "lora" field (one per adapter: --lora's, POST /lora-adapters).
    std::vector<float> lora_scales() const {
        std::lock_guard<std::mutex> lk(lora_mu_);
        return lora_scales_;
    }
    void set_lora_scales(std::vector<float> s) {
        std::lock_guard<std::mutex> lk(lora_mu_);
        lora_scales_ = std::move(s);
    }

private:
    mutable std::mutex lora_mu_;
    std::vector<float> lora_scales_;
};

}  // namespace bee::server
