// server/server: HTTP plumbing (pre-routing checks, errors, thread pool) and model loading.
#include "server/server.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/error.h"
#include "base/log.h"
#include "server/cors_proxy.h"
#include "server/http_util.h"
#include "server/idle_sleep.h"
#include "server/model_presets.h"
#include "server/routes.h"
#include "server/vertex.h"

namespace bee::server {

httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn) {
    return [fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
        try {
            if (ConnStream* c = current_conn()) {
                c->body_done();
                if (req.body.size() > c->limits().max_body_bytes) {
                    c->close_after();
                    throw HttpError(
                        413, "invalid_request_error",
                        strfmt("the request body is too large (%zu bytes; the limit is %zu, --max-body-bytes)",
                               req.body.size(), c->limits().max_body_bytes));
                }
            }
            fn(req, res);
        } catch (const HttpError& e) {
            send_error(res, e);
        } catch (const Error& e) {  // bad input found below the edge (tokenizer, template, ...)
            send_error(res, HttpError(400, "invalid_request_error", e.what()));
        } catch (const nlohmann::json::exception& e) {
            // note: request fields are type-checked where they are read; this net turns a check that was
            // missed (a field of the wrong type reaching nlohmann's get<>) into a 400, not a 500.
            BEE_LOG_WARN("%s %s: JSON type error: %s", req.method.c_str(), req.path.c_str(), e.what());
            send_error(res, HttpError(400, "invalid_request_error",
                                      strfmt("a request field has the wrong type: %s", e.what())));
        } catch (const std::exception& e) {
            BEE_LOG_ERROR("%s %s: %s", req.method.c_str(), req.path.c_str(), e.what());
            send_error(res, HttpError(500, "server_error", e.what()));
        }
    };
}

namespace {

// "b, a,b" -> {"a", "b"}: a comma list as llama-server keeps -a and --tags (a sorted set).
std::vector<std::string> sorted_list(const std::string& s) {
    std::vector<std::string> out = split_list(s);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

bool is_public_path(const std::string& path) {
    static const char* kPublic[] = {"/health", "/v1/health", "/models", "/v1/models", "/", "/index.html",
                                    // the files browsers ask of llama-server's web UI
                                    "/sw.js", "/manifest.webmanifest", "/_app/version.json"};
    return std::any_of(std::begin(kPublic), std::end(kPublic), [&](const char* p) { return path == p; });
}

// `Authorization: Bearer KEY` (the "Bearer " prefix optional) or `X-Api-Key: KEY`, compared on the bytes
// the client sent (httplib percent-decodes header values) in constant time, every key tried.
bool authorized(const ServerContext& ctx, const httplib::Request& req) {
    if (ctx.params.api_keys.empty() || is_public_path(req.path)) return true;
    const ConnStream* c = current_conn();
    bool found = false;
    std::string key =
        c ? raw_header_value(c->raw_headers(), "Authorization", &found) : req.get_header_value("Authorization");
    if (key.rfind("Bearer ", 0) == 0) key.erase(0, 7);
    if (key.empty())
        key = c ? raw_header_value(c->raw_headers(), "X-Api-Key", &found) : req.get_header_value("X-Api-Key");
    bool ok = false;
    for (const std::string& k : ctx.params.api_keys) ok |= key_equals(key, k);
    return ok && !key.empty();
}

// Content-Length must be one plain decimal within the body limit, Transfer-Encoding only "chunked" and
// never both: anything else is refused before the body is read. Returns the status (0: fine).
int check_body_framing(const httplib::Request& req, size_t max_body, std::string& why) {
    const bool chunked = req.has_header("Transfer-Encoding");
    if (chunked) {
        std::string te = req.get_header_value("Transfer-Encoding");
        std::transform(te.begin(), te.end(), te.begin(), ::tolower);
        if (te != "chunked" || req.get_header_value_count("Transfer-Encoding") != 1) {
            why = "Transfer-Encoding '" + te + "' is not supported (only chunked)";
            return 400;
        }
    }
    const size_t n_cl = req.get_header_value_count("Content-Length");
    if (n_cl == 0) return 0;
    if (chunked) {
        why = "a request cannot have both Content-Length and Transfer-Encoding";
        return 400;
    }
    const std::string cl = req.get_header_value("Content-Length");
    for (size_t i = 1; i < n_cl; i++)
        if (req.get_header_value("Content-Length", i) != cl) {
            why = "the request has several different Content-Length headers";
            return 400;
        }
    const bool digits = !cl.empty() && cl.size() <= 19 && std::all_of(cl.begin(), cl.end(), ::isdigit);
    if (!digits) {
        why = "invalid Content-Length '" + cl.substr(0, 40) + "': expected a decimal number of bytes";
        return 400;
    }
    const unsigned long long n = std::stoull(cl);
    if (n > max_body) {
        why = strfmt("the request body is too large (Content-Length %llu; the limit is %zu, --max-body-bytes)", n,
                     max_body);
        return 413;
    }
    return 0;
}

// CORS: the Origin echoed back for any origin by default, with --cors-origins only for the listed ones
// (`*`: any), and Access-Control-Allow-Credentials: true with it unless --no-cors-credentials, as
// llama-server (Bee authenticates by API key header only, never by cookie).
// llama-server's `--cors-origins localhost`: an origin whose host is localhost, 127.0.0.1 or [::1], any
// scheme and port ("http://localhost:8080"; not "http://localhost.evil.com").
bool is_localhost_origin(const std::string& origin) {
    const size_t scheme = origin.find("://");
    if (scheme == std::string::npos) return false;
    std::string host = origin.substr(scheme + 3);
    host = host.substr(0, host.find('/'));
    if (!host.empty() && host[0] == '[') {
        const size_t close = host.find(']');
        if (close == std::string::npos || (close + 1 < host.size() && host[close + 1] != ':')) return false;
        return host.substr(0, close + 1) == "[::1]";
    }
    host = host.substr(0, host.find(':'));
    return host == "localhost" || host == "127.0.0.1";
}

void set_cors_headers(const ServerParams& p, const httplib::Request& req, httplib::Response& res, bool preflight) {
    if (!req.has_header("Origin")) return;
    const std::string origin = req.get_header_value("Origin");
    const auto& list = p.cors_origins;
    const bool local = std::find(list.begin(), list.end(), "localhost") != list.end() && is_localhost_origin(origin);
    const bool named = local || std::find(list.begin(), list.end(), origin) != list.end();
    const bool any = list.empty() || std::find(list.begin(), list.end(), "*") != list.end();
    if (!named && !any) return;
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
    if (p.cors_credentials) res.set_header("Access-Control-Allow-Credentials", "true");
    if (preflight) {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");  // llama-server's default
        res.set_header("Access-Control-Allow-Headers", "*");
    }
}

}  // namespace

void register_model_routes(RouteTable& svr, ServerContext& ctx) {
    register_info_routes(svr, ctx);
    register_slot_routes(svr, ctx);
    register_completion_routes(svr, ctx);
    register_chat_routes(svr, ctx);
    register_tokenize_routes(svr, ctx);
    register_metrics_routes(svr, ctx);
    register_page_routes(svr, ctx);
    register_infill_routes(svr, ctx);
    register_anthropic_routes(svr, ctx);
    register_responses_routes(svr, ctx);
    register_embedding_routes(svr, ctx);
    register_lora_routes(svr, ctx);
    register_stream_routes(svr, ctx);
    // --sleep-idle-seconds: every route but the read-only ones holds the model awake (waking it first) until
    // its response is sent; a streamed reply is written after the handler returns, so the hold goes with it.
    svr.wrap([&ctx](const RouteTable::Route& r) -> RouteTable::Handler {
        const bool read_only =
            (r.method == "GET" && (is_public_path(r.pattern) || r.pattern == "/props" || r.pattern == "/metrics")) ||
            r.pattern == "/v1/stream" || r.pattern == "/v1/streams/lookup";  // a session, not the model
        if (read_only) return r.handler;
        return guarded([&ctx, inner = r.handler](const httplib::Request& req, httplib::Response& res) {
            IdleSleep::Hold hold = ctx.sleep ? ctx.sleep->hold() : nullptr;
            inner(req, res);
            if (hold && res.content_provider_)
                res.content_provider_resource_releaser_ = [prev = std::move(res.content_provider_resource_releaser_),
                                                           hold](bool ok) mutable {
                    if (prev) prev(ok);
                    hold.reset();
                };
        });
    });
}

HttpServer::HttpServer(ServerContext& ctx, ModelRouter* router) : ctx_(ctx) {
    const ServerParams& p = ctx_.params;
    const size_t n_max = p.threads_http > 0 ? (size_t)p.threads_http : 1024;
    svr_.new_task_queue = [n_max, n_keep = (size_t)p.sched.n_parallel + 4] {
        return new GrowingThreadPool(std::min(n_keep, n_max), n_max);
    };
    svr_.limits.write_timeout_ms = p.timeout_s * 1000;
    svr_.limits.idle_read_timeout_ms = std::min(p.timeout_s, 5) * 1000;
    svr_.limits.max_body_bytes = p.max_body_bytes;
    svr_.set_payload_max_length(p.max_body_bytes);
    // Order as llama-server: CORS, OPTIONS, the loading gate (every path, /health too), then the key.
    svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        ConnStream* c = current_conn();
        if (c) c->headers_done();
        std::string why;
        if (const int status = check_body_framing(req, ctx_.params.max_body_bytes, why)) {
            if (c) c->close_after();
            send_error(res, HttpError(status, "invalid_request_error", why));
            return httplib::Server::HandlerResponse::Handled;
        }
        set_cors_headers(ctx_.params, req, res, req.method == "OPTIONS");
        const bool has_body = req.has_header("Transfer-Encoding") ||
                              (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
        if (req.method == "OPTIONS") {
            if (c && has_body) c->close_after();
            res.set_content("", "text/html");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!ctx_.ready.load()) {
            if (c && has_body) c->close_after();
            send_error(res, HttpError(503, "unavailable_error", "Loading model"));
            return httplib::Server::HandlerResponse::Handled;
        }
        if (!authorized(ctx_, req)) {
            if (c && has_body) c->close_after();
            send_error(res, HttpError(401, "authentication_error", "Invalid API Key"));
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // Errors httplib produces itself (unknown route, body too large) get the JSON envelope too.
    svr_.set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
            if (const ConnStream* c = current_conn(); c && c->body_too_large()) res.status = 413;
            if (res.status == 404) send_error(res, HttpError(404, "not_found_error", "File Not Found: " + req.path));
            else if (res.status == 413)
                send_error(res, HttpError(413, "invalid_request_error", "the request body is too large"));
            else send_error(res, HttpError(res.status, "invalid_request_error", "bad request"));
            return httplib::Server::HandlerResponse::Handled;
        }));
    svr_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string msg = "unknown error";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            msg = e.what();
        } catch (...) {}
        send_error(res, HttpError(500, "server_error", msg));
    });
    RouteTable routes;
    if (router) {
        routes = register_router_routes(svr_, ctx_, *router);
    } else {
        register_model_routes(routes, ctx_);
        routes.install(svr_);
    }
    register_tool_routes(svr_, ctx_.tools);
    register_cors_proxy_routes(svr_, p.ui_mcp_proxy, p.timeout_s);
    const VertexParams vertex = vertex_params_from_env();
    if (vertex.enabled) {
        if (ctx_.params.port != vertex.port)
            BEE_LOG_WARN("AIP_MODE=PREDICTION: listening on AIP_HTTP_PORT %d instead of port %d", vertex.port,
                         ctx_.params.port);
        ctx_.params.port = vertex.port;
        // the endpoints a prediction may name: plain paths (not the regex ones), a POST before a GET
        std::vector<std::pair<std::string, httplib::Server::Handler>> named;
        for (const char* method : {"POST", "GET"})
            for (const RouteTable::Route& r : routes.routes())
                if (r.method == method && r.pattern.find_first_of("()[]\\*+?") == std::string::npos)
                    named.emplace_back(r.pattern, r.handler);
        register_vertex_routes(svr_, vertex, named);
    }
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

void load_model_weights(ServerContext& ctx) {
    const ServerParams& p = ctx.params;
    ctx.model = Model::load(p.model_path, p.load);
    ctx.engine = std::make_unique<Engine>(*ctx.model, ctx.engine_params);
    ctx.scheduler = std::make_unique<Scheduler>(*ctx.engine, p.sched);
}

void unload_model_weights(ServerContext& ctx) {
    if (ctx.scheduler) ctx.scheduler->shutdown();
    ctx.scheduler.reset();
    ctx.engine.reset();
    ctx.model.reset();
#ifdef __GLIBC__
    // note: after the first free glibc raises its mmap threshold, so the buffers of a reloaded model come
    // from the heap and would stay mapped when freed again: hand the free pages back explicitly.
    malloc_trim(0);
#endif
}

void load_server_context(ServerContext& ctx, const EngineParams& ep) {
    ServerParams& p = ctx.params;
    ctx.model = Model::load(p.model_path, p.load);
    BEE_LOG_INFO("model: %s", ctx.model->describe().c_str());
    resolve_embedding_options(ctx);
    ctx.engine_params = ep;
    ctx.engine = std::make_unique<Engine>(*ctx.model, ep);
    ctx.set_lora_scales(ctx.engine->lora_default());
    ctx.scheduler = std::make_unique<Scheduler>(*ctx.engine, p.sched);
    ctx.tmpl_source =
        p.chat_template.empty() ? ctx.model->gguf().get_str("tokenizer.chat_template", "") : p.chat_template;
    if (ctx.tmpl_source.empty()) {
        // No template in the file: pick a built-in one by the turn markers the vocabulary has (ChatML
        // otherwise, as llama-server does).
        const char* name = ctx.model->tokenizer().find_token("<start_of_turn>") >= 0 ? "gemma" : "chatml";
        ctx.tmpl_source = name;
        BEE_LOG_WARN("the model has no chat template: using the built-in '%s' (override with --chat-template)", name);
    }
    try {
        ctx.tmpl = std::make_unique<chat::Template>(chat::Template::load(ctx.tmpl_source));
    } catch (const Error& e) {
        fail("chat template: %s", e.what());
    }
    if (p.alias.empty()) {
        const size_t slash = p.model_path.find_last_of('/');
        p.alias = slash == std::string::npos ? p.model_path : p.model_path.substr(slash + 1);
    }
    ctx.model_aliases = sorted_list(p.alias);
    ctx.model_tags = sorted_list(p.tags);
    if (ctx.model_aliases.empty()) fail("-a/--alias '%s': give at least one name", p.alias.c_str());
    ctx.model_name = ctx.model_aliases.front();
    if (!p.slot_save_path.empty()) {  // as llama-server: the directory is created if missing
        std::error_code ec;
        std::filesystem::create_directories(p.slot_save_path, ec);
        if (ec)
            fail("--slot-save-path %s: cannot create the directory: %s", p.slot_save_path.c_str(),
                 ec.message().c_str());
    }
    BEE_LOG_INFO("%d slots of %d tokens (%s KV), batch %d, %d threads", p.sched.n_parallel, ctx.scheduler->n_ctx_slot(),
                 p.sched.kv_unified ? "unified" : "split", p.sched.n_batch, ctx.engine->params().n_threads);
    ctx.sleep = std::make_unique<IdleSleep>(ctx, p.sleep_idle_seconds);
    ctx.ready = true;
}

}  // namespace bee::server
