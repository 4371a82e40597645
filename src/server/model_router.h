// server/model_router: router mode (--models-dir / --models-preset). The models a server may serve, each
// loaded on demand into its own ServerContext (model, engine, scheduler with its slots and KV cache) and
// route table, in this process. At most --models-max are loaded at once: the least recently used idle
// model is unloaded to make room, and requests for a model that cannot be loaded yet wait in arrival order.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/context.h"
#include "server/model_presets.h"
#include "server/route_table.h"

namespace bee::server {

enum class ModelStatus { unloaded, loading, loaded };
const char* model_status_name(ModelStatus s);  // "unloaded", "loading", "loaded" (llama-server's values)

// One model's `bee serve` flags parsed into the settings of its context (app/cmd_serve provides this).
struct ModelConfig {
    ServerParams params;
    EngineParams engine;
};
// Throws Error naming the bad flag.
using ModelConfigParser = std::function<ModelConfig(const std::vector<std::string>& args)>;

struct RouterParams {
    std::string models_dir, models_preset;
    int32_t models_max = 4;              // --models-max; 0: no limit
    bool autoload = true;                // --models-autoload: a request for an unloaded model loads it
    std::vector<std::string> base_args;  // the router's own flags: every model gets them last (they win)
};

// A loaded model: its context and the routes bound to it.
struct ModelInstance {
    std::unique_ptr<ServerContext> ctx;
    RouteTable routes;
    std::atomic<int> n_active{0};  // leases held
};

class ModelRouter;

// A request's hold on a loaded model: a model with a lease is never unloaded to make room for another
// (an explicit /models/unload still stops it). Released when the response is sent.
class ModelLease {
public:
    ModelLease(ModelRouter& router, std::shared_ptr<ModelInstance> inst);
    ~ModelLease();
    ModelLease(const ModelLease&) = delete;
    ModelLease& operator=(const ModelLease&) = delete;
    ModelInstance& instance() { return *inst_; }

private:
    ModelRouter& router_;
    std::shared_ptr<ModelInstance> inst_;
};

// What GET /models shows of one model.
struct ModelView {
    ModelSpec spec;
    std::vector<std::string> args;  // bee serve flags it is (or would be) loaded with
    ModelStatus status = ModelStatus::unloaded;
    bool failed = false;  // the last load failed (status unloaded)
    std::string error;
    std::shared_ptr<ModelInstance> instance;  // when loaded
};

class ModelRouter {
public:
    // Reads the model sources and checks every model's flags (parsed, not loaded); throws Error.
    ModelRouter(RouterParams params, FlagLookup has_flag, ModelConfigParser parse);
    ~ModelRouter();

    const RouterParams& params() const { return p_; }

    // The model `name` (or an alias) ready for one request: loads it (autoload) or waits for its load;
    // with --models-max models loaded, waits its turn and unloads the least recently used idle one. `touch`
    // marks it used now; `gone` is polled while waiting (the client left). Throws HttpError with
    // llama-server's messages: 400 for a missing, unknown or (no autoload) unloaded model, 500 when
    // loading fails.
    std::shared_ptr<ModelLease> acquire(const std::string& name, bool autoload, bool touch,
                                        const std::function<bool()>& gone);
    // POST /models/load: starts loading (returns at once; 404 unknown, 400 already loading or loaded, 500
    // when --models-max models are busy). POST /models/unload: 400 unknown or not running.
    void load(const std::string& name);
    void unload(const std::string& name);
    // Every model, sorted by name; `reload` first re-reads the sources (models gone or changed are unloaded).
    std::vector<ModelView> list(bool reload);
    // Starts loading the preset's load-on-startup models.
    void load_startup_models();
    // Stops every model's scheduler (waiting requests get 503) and waits for loads in progress.
    void shutdown();

private:
    friend class ModelLease;
    struct Entry {
        ModelSpec spec;
        std::vector<std::string> args;
        ModelStatus status = ModelStatus::unloaded;
        bool failed = false;
        std::string error;
        int64_t last_used = 0;    // steady-clock ms
        int n_waiting = 0;        // requests blocked in acquire() for this model
        uint64_t generation = 0;  // bumped by every load and unload; a finished load checks it
        std::shared_ptr<ModelInstance> inst;
    };
    struct Loader {
        std::thread thread;
        bool done = false;
    };

    std::vector<ModelSpec> read_specs() const;
    std::vector<std::string> model_args(const ModelSpec& spec) const;
    Entry* find_locked(const std::string& name);
    bool has_capacity_locked() const;
    std::string pick_victim_locked(const std::string& exclude) const;
    std::shared_ptr<ModelInstance> unload_locked(Entry& e);
    void start_load_locked(Entry& e);
    void run_load(std::string name, uint64_t generation, std::vector<std::string> args, Loader* self);
    void leave_locked(const std::string& name);
    void released();
    static void retire(std::shared_ptr<ModelInstance> inst);

    RouterParams p_;
    FlagLookup has_flag_;
    ModelConfigParser parse_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, Entry> entries_;
    std::deque<std::string> queue_;  // models waited for while --models-max were loaded, in arrival order
    std::list<Loader> loaders_;
    bool stopping_ = false;
};

}  // namespace bee::server
