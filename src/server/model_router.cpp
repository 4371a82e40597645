// server/model_router: model entries, loading on threads of their own, LRU eviction and the wait queue.
#include "server/model_router.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "base/error.h"
#include "base/log.h"
#include "server/http_util.h"
#include "server/routes.h"
#include "server/server.h"

namespace bee::server {

namespace {

int64_t now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

HttpError invalid(const std::string& message) { return HttpError(400, "invalid_request_error", message); }

// A model's context, loaded and with its routes bound, from its flags.
std::shared_ptr<ModelInstance> build_instance(const ModelConfigParser& parse, const std::vector<std::string>& args) {
    ModelConfig cfg = parse(args);
    auto inst = std::make_shared<ModelInstance>();
    inst->ctx = std::make_unique<ServerContext>();
    inst->ctx->params = cfg.params;
    inst->ctx->created = (int64_t)time(nullptr);
    load_server_context(*inst->ctx, cfg.engine);
    register_model_routes(inst->routes, *inst->ctx);
    return inst;
}

}  // namespace

const char* model_status_name(ModelStatus s) {
    switch (s) {
        case ModelStatus::loading: return "loading";
        case ModelStatus::loaded: return "loaded";
        default: return "unloaded";
    }
}

ModelLease::ModelLease(ModelRouter& router, std::shared_ptr<ModelInstance> inst)
    : router_(router), inst_(std::move(inst)) {
    inst_->n_active++;
}

ModelLease::~ModelLease() {
    inst_->n_active--;
    router_.released();
}

ModelRouter::ModelRouter(RouterParams params, FlagLookup has_flag, ModelConfigParser parse)
    : p_(std::move(params)), has_flag_(std::move(has_flag)), parse_(std::move(parse)) {
    int n_startup = 0;
    for (ModelSpec& spec : read_specs()) {
        Entry e;
        e.args = model_args(spec);
        n_startup += spec.load_on_startup;
        e.spec = std::move(spec);
        entries_.emplace(e.spec.name, std::move(e));
    }
    if (p_.models_max > 0 && n_startup > p_.models_max)
        fail("%d models are marked load-on-startup but --models-max is %d", n_startup, p_.models_max);
    BEE_LOG_INFO("router mode: %zu models, at most %d loaded at once%s", entries_.size(), p_.models_max,
                 p_.models_max > 0 ? "" : " (no limit)");
    for (const auto& [name, e] : entries_) BEE_LOG_INFO("  %s (%s)", name.c_str(), e.spec.source.c_str());
}

ModelRouter::~ModelRouter() { shutdown(); }

// The sources, every model's flags checked now (a bad preset key or value fails at start-up, not at load).
std::vector<ModelSpec> ModelRouter::read_specs() const {
    std::vector<ModelSpec> specs = collect_model_specs(p_.models_dir, p_.models_preset, has_flag_);
    if (specs.empty()) fail("router mode found no models (no .gguf in --models-dir and no section in --models-preset)");
    for (const ModelSpec& s : specs) {
        try {
            parse_(model_args(s));
        } catch (const Error& e) {
            fail("model '%s' (%s): %s", s.name.c_str(), s.source.c_str(), e.what());
        }
    }
    return specs;
}

// The sources' flags, then the router's own, then the name the model answers to.
std::vector<std::string> ModelRouter::model_args(const ModelSpec& spec) const {
    std::vector<std::string> args = spec.args;
    args.insert(args.end(), p_.base_args.begin(), p_.base_args.end());
    args.insert(args.end(), {"--alias", spec.name});
    return args;
}

ModelRouter::Entry* ModelRouter::find_locked(const std::string& name) {
    auto it = entries_.find(name);
    if (it != entries_.end()) return &it->second;
    for (auto& [key, e] : entries_)
        if (std::find(e.spec.aliases.begin(), e.spec.aliases.end(), name) != e.spec.aliases.end()) return &e;
    return nullptr;
}

bool ModelRouter::has_capacity_locked() const {
    if (p_.models_max <= 0) return true;
    int running = 0;
    for (const auto& [key, e] : entries_) running += e.status != ModelStatus::unloaded;
    return running < p_.models_max;
}

// The least recently used loaded model that no request holds or waits for (empty if none).
std::string ModelRouter::pick_victim_locked(const std::string& exclude) const {
    std::string victim;
    int64_t oldest = 0;
    for (const auto& [key, e] : entries_) {
        if (key == exclude || e.status != ModelStatus::loaded || e.inst->n_active > 0 || e.n_waiting > 0) continue;
        if (victim.empty() || e.last_used < oldest) {
            victim = key;
            oldest = e.last_used;
        }
    }
    return victim;
}

std::shared_ptr<ModelInstance> ModelRouter::unload_locked(Entry& e) {
    BEE_LOG_INFO("unloading model %s", e.spec.name.c_str());
    e.status = ModelStatus::unloaded;
    e.failed = false;
    e.error.clear();
    e.generation++;
    cv_.notify_all();
    return std::move(e.inst);
}

// note: stopping the scheduler fails the requests still running on it; a model evicted for room has none.
void ModelRouter::retire(std::shared_ptr<ModelInstance> inst) {
    if (inst) inst->ctx->shutdown();
}

void ModelRouter::start_load_locked(Entry& e) {
    for (auto it = loaders_.begin(); it != loaders_.end();) {  // loads that finished: their threads are ending
        if (!it->done) {
            ++it;
            continue;
        }
        it->thread.join();
        it = loaders_.erase(it);
    }
    BEE_LOG_INFO("loading model %s", e.spec.name.c_str());
    e.status = ModelStatus::loading;
    e.failed = false;
    e.error.clear();
    e.last_used = now_ms();
    const uint64_t gen = ++e.generation;
    Loader& l = loaders_.emplace_back();
    l.thread = std::thread(&ModelRouter::run_load, this, e.spec.name, gen, e.args, &l);
    cv_.notify_all();
}

void ModelRouter::run_load(std::string name, uint64_t generation, std::vector<std::string> args, Loader* self) {
    std::shared_ptr<ModelInstance> inst;
    std::string error;
    try {
        inst = build_instance(parse_, args);
    } catch (const std::exception& e) {
        error = e.what();
    }
    std::unique_lock<std::mutex> lk(mu_);
    self->done = true;
    auto it = entries_.find(name);
    if (stopping_ || it == entries_.end() || it->second.generation != generation) {
        lk.unlock();  // unloaded (or removed) while it was loading
        retire(std::move(inst));
        return;
    }
    Entry& e = it->second;
    if (inst) {
        e.inst = std::move(inst);
        e.status = ModelStatus::loaded;
        e.last_used = now_ms();
        BEE_LOG_INFO("model %s loaded", name.c_str());
    } else {
        e.status = ModelStatus::unloaded;
        e.failed = true;
        e.error = error;
        BEE_LOG_ERROR("model %s failed to load: %s", name.c_str(), error.c_str());
    }
    cv_.notify_all();
}

void ModelRouter::leave_locked(const std::string& name) {
    auto it = entries_.find(name);
    if (it != entries_.end() && --it->second.n_waiting > 0) return;
    queue_.erase(std::remove(queue_.begin(), queue_.end(), name), queue_.end());
    cv_.notify_all();
}

void ModelRouter::released() {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();  // a queued request may now unload this model, if it went idle
}

std::shared_ptr<ModelLease> ModelRouter::acquire(const std::string& name, bool autoload, bool touch,
                                                 const std::function<bool()>& gone) {
    if (name.empty()) throw invalid("model name is missing from the request");
    std::unique_lock<std::mutex> lk(mu_);
    Entry* found = find_locked(name);
    if (!found) throw invalid(strfmt("model '%s' not found", name.c_str()));
    if (!autoload && found->status == ModelStatus::unloaded) throw invalid("model is not loaded");
    const std::string key = found->spec.name;
    found->n_waiting++;
    bool tried = false;  // this request saw a load of it start (its own or another's)
    try {
        for (;;) {
            auto it = entries_.find(key);
            if (it == entries_.end()) throw invalid(strfmt("model '%s' not found", name.c_str()));
            Entry& e = it->second;
            if (stopping_) throw HttpError(503, "unavailable_error", "the server is shutting down");
            if (e.status == ModelStatus::loaded) {
                if (touch) e.last_used = now_ms();
                auto lease = std::make_shared<ModelLease>(*this, e.inst);
                leave_locked(key);
                return lease;
            }
            if (e.status == ModelStatus::loading) tried = true;
            if (e.status == ModelStatus::unloaded) {
                if (tried && e.failed)
                    throw HttpError(500, "server_error",
                                    strfmt("model name=%s failed to load: %s", key.c_str(), e.error.c_str()));
                if (tried && !autoload) throw invalid("model is not loaded");
                if (std::find(queue_.begin(), queue_.end(), key) == queue_.end()) queue_.push_back(key);
                if (queue_.front() == key) {  // its turn: load when there is room, else make room
                    if (has_capacity_locked()) {
                        queue_.pop_front();
                        start_load_locked(e);
                        tried = true;
                        continue;
                    }
                    const std::string victim = pick_victim_locked(key);
                    if (!victim.empty()) {
                        BEE_LOG_INFO("--models-max %d reached: unloading %s, least recently used, for %s",
                                     p_.models_max, victim.c_str(), key.c_str());
                        std::shared_ptr<ModelInstance> inst = unload_locked(entries_.at(victim));
                        lk.unlock();
                        retire(std::move(inst));
                        lk.lock();
                        continue;
                    }
                }
            }
            if (gone && gone()) throw invalid("request cancelled while waiting for model name=" + key);
            cv_.wait_for(lk, std::chrono::milliseconds(200));
        }
    } catch (...) {
        leave_locked(key);
        throw;
    }
}

void ModelRouter::load(const std::string& name) {
    std::unique_lock<std::mutex> lk(mu_);
    if (stopping_) throw HttpError(503, "unavailable_error", "the server is shutting down");
    Entry* e = find_locked(name);
    if (!e) throw HttpError(404, "not_found_error", "model is not found");
    if (e->status != ModelStatus::unloaded) throw invalid("model is already running");
    std::shared_ptr<ModelInstance> evicted;
    if (!has_capacity_locked()) {
        const std::string victim = pick_victim_locked(e->spec.name);
        if (victim.empty()) throw HttpError(500, "server_error", "model limit reached, try again later");
        BEE_LOG_INFO("--models-max %d reached: unloading %s, least recently used", p_.models_max, victim.c_str());
        evicted = unload_locked(entries_.at(victim));
    }
    start_load_locked(*e);
    lk.unlock();
    retire(std::move(evicted));
}

void ModelRouter::unload(const std::string& name) {
    std::unique_lock<std::mutex> lk(mu_);
    Entry* e = find_locked(name);
    if (!e) throw invalid("model is not found");
    if (e->status == ModelStatus::unloaded) throw invalid("model is not running");
    std::shared_ptr<ModelInstance> inst = unload_locked(*e);
    lk.unlock();
    retire(std::move(inst));
}

std::vector<ModelView> ModelRouter::list(bool reload) {
    std::vector<std::shared_ptr<ModelInstance>> retired;
    if (reload) {
        std::vector<ModelSpec> specs = read_specs();  // throws (Error: 400) on a broken source, list unchanged
        std::lock_guard<std::mutex> lk(mu_);
        std::map<std::string, ModelSpec> fresh;
        for (ModelSpec& s : specs) fresh.emplace(s.name, std::move(s));
        for (auto it = entries_.begin(); it != entries_.end();) {
            auto f = fresh.find(it->first);
            const bool changed = f == fresh.end() || model_args(f->second) != it->second.args;
            if (changed && it->second.status != ModelStatus::unloaded) retired.push_back(unload_locked(it->second));
            if (f == fresh.end()) it = entries_.erase(it);  // a waiter finds it gone and answers "not found"
            else ++it;
        }
        for (auto& [key, s] : fresh) {
            Entry& e = entries_[key];
            e.args = model_args(s);
            e.spec = std::move(s);
        }
    }
    for (auto& inst : retired) retire(std::move(inst));
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<ModelView> out;
    for (const auto& [key, e] : entries_) out.push_back({e.spec, e.args, e.status, e.failed, e.error, e.inst});
    return out;
}

void ModelRouter::load_startup_models() {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return;
    for (auto& [key, e] : entries_)
        if (e.spec.load_on_startup && e.status == ModelStatus::unloaded) start_load_locked(e);
}

void ModelRouter::shutdown() {
    std::vector<std::shared_ptr<ModelInstance>> running;
    {
        std::lock_guard<std::mutex> lk(mu_);
        stopping_ = true;
        for (auto& [key, e] : entries_)
            if (e.inst) running.push_back(e.inst);
        cv_.notify_all();
    }
    for (auto& inst : running) retire(inst);
    // A load in progress finishes, sees stopping_ and drops what it loaded. No load starts once stopping_
    // is set, so the list is not changed under this walk.
    for (Loader& l : loaders_)
        if (l.thread.joinable()) l.thread.join();
}

}  // namespace bee::server
