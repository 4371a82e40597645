// server/routes_router: the HTTP API of router mode — /models (/v1/models) listing every model with its
// status, POST /models/load and /models/unload, the router's /props and /health, and for every other
// endpoint a dispatcher that hands the request to the route of the model it names (the body's `model`,
// or `?model=` on a GET), loading that model first when needed.
#include <ctime>

#include "server/idle_sleep.h"
#include "server/model_router.h"
#include "server/routes.h"
#include "server/server.h"

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
// returns, so the lease is kept until the response is done with it.
void dispatch(ModelRouter& router, const std::string& method, const std::string& pattern, const httplib::Request& req,
              httplib::Response& res) {
    std::shared_ptr<ModelLease> lease = router.acquire(requested_model(method, req), autoload(router, req),
                                                       method == "POST", [&req] { return peer_closed(req); });
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

std::string body_model(const httplib::Request& req) {
    return get_string(req.body.empty() ? Json::object() : parse_body(req), "model", "");
}

}  // namespace

RouteTable register_router_routes(httplib::Server& svr, ServerContext& ctx, ModelRouter& router) {
    RouteTable dispatched;
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
    svr.Get("/props", guarded([&router](const httplib::Request& req, httplib::Response& res) {
                if (req.get_param_value("model").empty()) send_json(res, router_props(router));
                else dispatch(router, "GET", "/props", req, res);
            }));
    RouteTable page;
    register_page_routes(page, ctx);
    page.install(svr);

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
        auto h = guarded(
            [&router, method = r.method, pattern = r.pattern](const httplib::Request& req, httplib::Response& res) {
                dispatch(router, method, pattern, req, res);
            });
        if (r.method == "GET") svr.Get(r.pattern, h);
        else svr.Post(r.pattern, h);
        (r.method == "GET" ? dispatched.Get(r.pattern, h) : dispatched.Post(r.pattern, h));
    }
    return dispatched;
}

}  // namespace bee::server
