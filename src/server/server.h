// server/server: the HTTP server around a ServerContext — CORS, the 503-while-loading gate, API-key
// auth, body size limit, JSON errors for every failure, route registration, listen/stop.
#pragma once
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>

#include "server/context.h"
#include "server/http_conn.h"

namespace bee::server {

class HttpServer {
public:
    explicit HttpServer(ServerContext& ctx);
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

// Loads the model, engine, scheduler and chat template into ctx (then sets ctx.ready).
// Throws bee::Error with the reason (bad file, bad template, bad options).
void load_server_context(ServerContext& ctx, const EngineParams& ep);

}  // namespace bee::server
