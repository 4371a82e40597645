// server/routes_router: the HTTP API of router mode — /models (/v1/models) listing every model with its
// status, POST /models/load and /models/unload, the router's /props and /health, and for every other
// endpoint a dispatcher that hands the request to the route of the model it names (the body's `model`,
// or `?model=` on a GET), loading that model first when needed.
#include <algorithm>
#include <ctime>

#include "server/idle_sleep.h"
#include "server/model_router.h"
#include "server/routes.h"
#include "server/server.h"
#include "server/stream_sessions.h"

namespace bee::server {

namespace {

Json model_entry(const ModelView& v, int64_t now) {
    Json args = Json::array({"bee", "serve"});
    for (const std::string& a : v.args) args.push_back(a);
    // llama-server's "sleeping": loaded, its weights freed by --sleep-idle-seconds until a request wakes it
    const bool asleep =
        v.status == ModelStatus::loaded && v.instance && v.instance->ctx->sleep && v.instance->ctx->sleep->sleeping();
    Json status = {{"value", asleep ? "sleeping" : model_status_name(v.status)},
                   {"args", args},
                   {"preset", v.spec.preset}};
    if (v.failed) {  // llama-server reports the exit code of the process that failed; here the load's error
        status["failed"] = true;
        status["exit_code"] = 1;
        status["error"] = v.error;
    }
    Json m =
        {{"id", v.spec.name},       {"aliases", v.spec.aliases},
         {"tags", v.spec.tags},     {"object", "model"},
         {"owned_by", "bee"},       {"created", now},
         {"status", status},        {"architecture", {{"input_modalities", {"text"}}, {"output_modalities", {"text"}}}},
         {"source", v.spec.source}, {"can_remove", false}};
    if (v.status == ModelStatus::loaded && v.instance) {  // what the model itself reports (meta), as llama-server
        const Json info = model_info_json(*v.instance->ctx);
        for (auto it = info.begin(); it != info.end(); ++it)
            if (!m.contains(it.key())) m[it.key()] = it.value();
    }
    return m;
}

Json router_props(const ModelRouter& router) {
    return {{"role", "router"},
            {"max_instances", router.params().models_max},
            {"models_autoload", router.params().autoload},
            {"model_alias", "bee"},
            {"model_path", "none"},
            {"default_generation_settings", {{"params", Json::object()}, {"n_ctx", 0}}},
            {"build_info", "bee"}};
}

// `?autoload=true|false` on a request overrides --models-autoload.
bool autoload(const ModelRouter& router, const httplib::Request& req) {
    const std::string q = req.get_param_value("autoload");
    return q.empty() ? router.params().autoload : q == "true" || q == "1";
}

// The model a request names: `?model=` (any method; the only way for a POST whose body is not an object,
// such as POST /lora-adapters' array), else the body's "model" on a POST.
std::string requested_model(const std::string& method, const httplib::Request& req) {
    const std::string q = req.get_param_value("model");
    if (!q.empty() || method == "GET" || req.body.empty()) return q;
    const Json body = parse_json_bounded(req.body, kMaxJsonDepth);
    return body.is_object() ? get_string(body, "model", "") : "";
}

// Runs the model's own handler for (method, pattern). A streamed reply is written after the handler
// returns, so the lease is kept until the response is done with it. A POST with X-Conversation-Id
// registers its model as the conversation's stream owner first; while it waits for the model, only a
// stop (DELETE /v1/stream, which forgets the registration) cancels it, not a client that left, so the
// generation still reaches its session for a client that comes back.
void dispatch(ModelRouter& router, ConvOwners& owners, const std::string& method, const std::string& pattern,
              const httplib::Request& req, httplib::Response& res) {
    const std::string model = requested_model(method, req);
    const std::string conv_id = method == "POST" ? conversation_id(req) : "";
    const uint64_t ticket = owners.remember(conv_id, model);
    const auto stopped = [&] { return ticket != 0 && !owners.alive(conv_id, ticket); };
    std::shared_ptr<ModelLease> lease;
    try {
        lease = router.acquire(model, autoload(router, req), method == "POST",
                               [&] { return ticket != 0 ? stopped() : peer_closed(req); });
    } catch (const HttpError&) {
        if (!stopped()) throw;
    }
    if (stopped())
        throw HttpError(400, "invalid_request_error", "request cancelled by a stop while the model was loading");
    const RouteTable::Handler* handler = lease->instance().routes.find(method, pattern);
    if (!handler) throw HttpError(404, "not_found_error", "File Not Found: " + req.path);
    (*handler)(req, res);
    if (res.content_provider_) {
        res.content_provider_resource_releaser_ = [prev = std::move(res.content_provider_resource_releaser_),
                                                   lease](bool ok) {
            if (prev) prev(ok);
            (void)lease;  // held until the response is destroyed
        };
    }
}

// The model a conversation's stream belongs to, when it is loaded; else the reason as an HttpError: 503
// while it loads (the session appears once the waiting request reaches it), 404 otherwise.
std::shared_ptr<ModelInstance> stream_owner(ModelRouter& router, ConvOwners& owners, const std::string& conv_id) {
    const std::string model = owners.owner(conv_id);
    for (const ModelView& v : model.empty() ? std::vector<ModelView>{} : router.list(false)) {
        if (v.spec.name != model &&
            std::find(v.spec.aliases.begin(), v.spec.aliases.end(), model) == v.spec.aliases.end())
            continue;
        if (v.status == ModelStatus::loaded && v.instance) return v.instance;
        if (v.status == ModelStatus::loading)
            throw HttpError(503, "unavailable_error", "Stream owner model is loading, retry later");
    }
    throw HttpError(404, "not_found_error", "Stream not found or expired");
}

// /v1/stream and /v1/streams/lookup in router mode: each conversation goes to the model that serves it.
void register_router_stream_routes(httplib::Server& svr, ModelRouter& router, std::shared_ptr<ConvOwners> owners) {
    svr.Get("/v1/stream", guarded([&router, owners](const httplib::Request& req, httplib::Response& res) {
                const std::string id = conv_id_param(req);
                handle_stream_get(*stream_owner(router, *owners, id)->ctx->streams, req, res);
            }));
    svr.Delete("/v1/stream", guarded([&router, owners](const httplib::Request& req, httplib::Response& res) {
                   const std::string id = conv_id_param(req);
                   std::shared_ptr<ModelInstance> inst;
                   try {
                       inst = stream_owner(router, *owners, id);
                   } catch (const HttpError&) {  // not loaded: forgetting it cancels a request waiting for the load
                   }
                   if (inst) inst->ctx->streams->cancel(id);
                   owners->forget(id);
                   res.status = 204;
               }));
    svr.Post("/v1/streams/lookup", guarded([&router, owners](const httplib::Request& req, httplib::Response& res) {
                 Json all = Json::array();
                 for (const std::string& id : lookup_ids(req)) {
                     std::shared_ptr<ModelInstance> inst;
                     try {
                         inst = stream_owner(router, *owners, id);
                     } catch (const HttpError&) {  // no loaded owner: no session to report
                         continue;
                     }
                     for (Json& e : lookup_entries(*inst->ctx->streams, {id})) all.push_back(std::move(e));
                 }
                 send_json(res, all);
             }));
}

std::string body_model(const httplib::Request& req) {
    return get_string(req.body.empty() ? Json::object() : parse_body(req), "model", "");
}

}  // namespace

RouteTable register_router_routes(httplib::Server& svr, ServerContext& ctx, ModelRouter& router) {
    RouteTable dispatched;
    auto owners = std::make_shared<ConvOwners>();  // conversation → model, for the stream routes
    auto health = guarded([](const httplib::Request&, httplib::Response& res) { send_json(res, {{"status", "ok"}}); });
    svr.Get("/health", health);
    svr.Get("/v1/health", health);
    auto models = guarded([&router](const httplib::Request& req, httplib::Response& res) {
        const int64_t now = (int64_t)time(nullptr);
        Json data = Json::array();
        for (const ModelView& v : router.list(!req.get_param_value("reload").empty()))
            data.push_back(model_entry(v, now));
        send_json(res, {{"data", data}, {"object", "list"}});
    });
    svr.Get("/models", models);
    svr.Get("/v1/models", models);
    svr.Post("/models/load", guarded([&router](const httplib::Request& req, httplib::Response& res) {
                 router.load(body_model(req));
                 send_json(res, {{"success", true}});
             }));
    svr.Post("/models/unload", guarded([&router](const httplib::Request& req, httplib::Response& res) {
                 router.unload(body_model(req));
                 send_json(res, {{"success", true}});
             }));
    svr.Get("/props", guarded([&router, owners](const httplib::Request& req, httplib::Response& res) {
                if (req.get_param_value("model").empty()) send_json(res, router_props(router));
                else dispatch(router, *owners, "GET", "/props", req, res);
            }));
    RouteTable page;
    register_page_routes(page, ctx);
    page.install(svr);
    register_router_stream_routes(svr, router, owners);

    // Every other route of a model's API, dispatched. The table is built on a context with no model only
    // to learn the patterns: its handlers are never called.
    ServerContext shape;
    shape.params = ctx.params;
    RouteTable model_routes;
    register_model_routes(model_routes, shape);
    for (const RouteTable::Route& r : model_routes.routes()) {
        if (r.method == "GET" &&
            (r.pattern == "/health" || r.pattern == "/v1/health" || r.pattern == "/models" ||
             r.pattern == "/v1/models" || r.pattern == "/props" || r.pattern == "/" || r.pattern == "/index.html" ||
             r.pattern == "/sw.js" || r.pattern == "/manifest.webmanifest" || r.pattern == "/_app/version.json"))
            continue;
        if (r.pattern == "/v1/stream" || r.pattern == "/v1/streams/lookup") continue;  // by conversation, above
        auto h = guarded([&router, owners, method = r.method, pattern = r.pattern](const httplib::Request& req,
                                                                                   httplib::Response& res) {
            dispatch(router, *owners, method, pattern, req, res);
        });
        if (r.method == "GET") svr.Get(r.pattern, h), dispatched.Get(r.pattern, h);
        else if (r.method == "DELETE") svr.Delete(r.pattern, h), dispatched.Delete(r.pattern, h);
        else svr.Post(r.pattern, h), dispatched.Post(r.pattern, h);
    }
    return dispatched;
}

}  // namespace bee::server
