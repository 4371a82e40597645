// server/server: the HTTP server around a ServerContext — CORS, the 503-while-loading gate, API-key
// auth, body size limit, JSON errors for every failure, route registration, listen/stop.
#pragma once
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>

#include "server/context.h"
#include "server/http_conn.h"
#include "server/route_table.h"

namespace bee::server {

class ModelRouter;

class HttpServer {
public:
    // One model: ctx's routes. Router mode (`router` given): ctx holds only the server's parameters, and
    // the routes are the router's (server/routes_router).
    explicit HttpServer(ServerContext& ctx, ModelRouter* router = nullptr);
    ~HttpServer();

    // Binds host:port and starts answering on a background thread (503 until ctx.ready).
    // Throws bee::Error if the address cannot be bound.
    void start();
    void stop();

private:
    ServerContext& ctx_;
    BeeHttplibServer svr_;
    std::thread thread_;
};

// Router mode's routes: /models, /models/load, /models/unload, /props, /health, the chat page, and a
// dispatcher to the named model for every other endpoint.
// Returns the (method, path, handler) rows of the model API it dispatched, for server/vertex.
RouteTable register_router_routes(httplib::Server& svr, ServerContext& ctx, ModelRouter& router);

// Loads the model, engine, scheduler and chat template into ctx (then sets ctx.ready).
// Throws bee::Error with the reason (bad file, bad template, bad options).
void load_server_context(ServerContext& ctx, const EngineParams& ep);
// --sleep-idle-seconds: frees the scheduler, engine (KV cache) and model; builds them again as they were
// loaded (throws bee::Error). Only while no request uses them (server/idle_sleep).
void unload_model_weights(ServerContext& ctx);
void load_model_weights(ServerContext& ctx);

}  // namespace bee::server
