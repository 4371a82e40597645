// server/server: HTTP plumbing (pre-routing checks, errors, thread pool) and model loading.
#include "server/server.h"

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "base/error.h"
#include "base/log.h"
#include "chat/builtin_templates.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace bee::server {

httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn) {
    return [fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
        try {
            fn(req, res);
        } catch (const HttpError& e) {
            send_error(res, e);
        } catch (const Error& e) {  // bad input found below the edge (tokenizer, template, ...)
            send_error(res, HttpError(400, "invalid_request_error", e.what()));
        } catch (const std::exception& e) {
            BEE_LOG_ERROR("%s %s: %s", req.method.c_str(), req.path.c_str(), e.what());
            send_error(res, HttpError(500, "server_error", e.what()));
        }
    };
}

namespace {

bool is_public_path(const std::string& path) {
    static const char* kPublic[] = {"/health", "/v1/health", "/models", "/v1/models", "/", "/index.html"};
    return std::any_of(std::begin(kPublic), std::end(kPublic), [&](const char* p) { return path == p; });
}

// `Authorization: Bearer KEY` (the "Bearer " prefix optional) or `X-Api-Key: KEY`.
bool authorized(const ServerContext& ctx, const httplib::Request& req) {
    if (ctx.params.api_keys.empty() || is_public_path(req.path)) return true;
    std::string key = req.get_header_value("Authorization");
    if (key.rfind("Bearer ", 0) == 0) key.erase(0, 7);
    if (key.empty()) key = req.get_header_value("X-Api-Key");
    const auto& keys = ctx.params.api_keys;
    return !key.empty() && std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

HttpServer::HttpServer(ServerContext& ctx) : ctx_(ctx) {
    const ServerParams& p = ctx_.params;
    const int n_threads = p.threads_http > 0 ? p.threads_http : std::max(p.sched.n_parallel + 4, 64);
    svr_.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
    svr_.set_read_timeout(p.timeout_s, 0);
    svr_.set_write_timeout(p.timeout_s, 0);
    svr_.set_payload_max_length(p.max_body_bytes);
    // Order as llama-server: CORS, OPTIONS, the loading gate (every path, /health too), then the key.
    svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        res.set_header("Access-Control-Allow-Origin", req.get_header_value("Origin"));
        if (req.method == "OPTIONS") {
            res.set_header("Access-Control-Allow-Credentials", "true");
            res.set_header("Access-Control-Allow-Methods", "GET, POST");
            res.set_header("Access-Control-Allow-Headers", "*");
            res.set_content("", "text/html");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!ctx_.ready.load()) {
            send_error(res, HttpError(503, "unavailable_error", "Loading model"));
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!authorized(ctx_, req)) {
            send_error(res, HttpError(401, "authentication_error", "Invalid API Key"));
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // Errors httplib produces itself (unknown route, body too large) get the JSON envelope too.
    svr_.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        if (res.status == 404)
            send_error(res, HttpError(404, "not_found_error", "File Not Found: " + req.path));
        else if (res.status == 413)
            send_error(res, HttpError(413, "invalid_request_error", "the request body is too large"));
        else
            send_error(res, HttpError(res.status, "invalid_request_error", "bad request"));
        return httplib::Server::HandlerResponse::Handled;
    }));
    svr_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string msg = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            msg = e.what();
        } catch (...) {
        }
        send_error(res, HttpError(500, "server_error", msg));
    });
    register_info_routes(svr_, ctx_);
    register_slot_routes(svr_, ctx_);
    register_completion_routes(svr_, ctx_);
    register_chat_routes(svr_, ctx_);
    register_tokenize_routes(svr_, ctx_);
    register_metrics_routes(svr_, ctx_);
    register_page_routes(svr_, ctx_);
    register_infill_routes(svr_, ctx_);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
    const ServerParams& p = ctx_.params;
    if (!svr_.bind_to_port(p.host.c_str(), p.port))
        fail("cannot listen on %s:%d (is the port in use? choose another with --port)", p.host.c_str(), p.port);
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
}

void HttpServer::stop() {
    if (!thread_.joinable()) return;
    svr_.stop();
    shutdown_accepted_connections(ctx_.params.port);  // idle keep-alive connections would hold the join ~5 s
    thread_.join();
}

void load_server_context(ServerContext& ctx, const EngineParams& ep) {
    ServerParams& p = ctx.params;
    ctx.model = Model::load(p.model_path, p.load);
    BEE_LOG_INFO("model: %s", ctx.model->describe().c_str());
    ctx.engine = std::make_unique<Engine>(*ctx.model, ep);
    ctx.scheduler = std::make_unique<Scheduler>(*ctx.engine, p.sched);
    ctx.tmpl_source = p.chat_template.empty() ? ctx.model->gguf().get_str("tokenizer.chat_template", "") : p.chat_template;
    if (ctx.tmpl_source.empty()) {
        // No template in the file: pick a built-in one by the turn markers the vocabulary has (ChatML
        // otherwise, as llama-server does).
        const char* name = ctx.model->tokenizer().find_token("<start_of_turn>") >= 0 ? "gemma" : "chatml";
        ctx.tmpl_source = chat::builtin_template(name);
        BEE_LOG_WARN("the model has no chat template: using the built-in '%s' (override with --chat-template)", name);
    }
    try {
        ctx.tmpl = std::make_unique<chat::Template>(chat::Template::parse(ctx.tmpl_source));
    } catch (const Error& e) {
        fail("chat template: %s", e.what());
    }
    if (p.alias.empty()) {
        const size_t slash = p.model_path.find_last_of('/');
        p.alias = slash == std::string::npos ? p.model_path : p.model_path.substr(slash + 1);
    }
    ctx.model_name = p.alias;
    if (!p.slot_save_path.empty()) {  // as llama-server: the directory is created if missing
        std::error_code ec;
        std::filesystem::create_directories(p.slot_save_path, ec);
        if (ec) fail("--slot-save-path %s: cannot create the directory: %s", p.slot_save_path.c_str(), ec.message().c_str());
    }
    BEE_LOG_INFO("%d slots of %d tokens (%s KV), batch %d, %d threads", p.sched.n_parallel, ctx.scheduler->n_ctx_slot(),
                 p.sched.kv_unified ? "unified" : "split", p.sched.n_batch, ctx.engine->params().n_threads);
    ctx.ready = true;
}

}  // namespace bee::server
