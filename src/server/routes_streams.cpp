// server/routes_streams: llama-server's resumable-stream routes over this server's sessions (the
// sessions themselves and the handlers: server/stream_sessions).
#include "server/routes.h"
#include "server/stream_sessions.h"

namespace bee::server {

void register_stream_routes(RouteTable& svr, ServerContext& ctx) {
    svr.Get("/v1/stream", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
                handle_stream_get(*ctx.streams, req, res);
            }));
    svr.Delete("/v1/stream", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
                   handle_stream_delete(*ctx.streams, req, res);
               }));
    svr.Post("/v1/streams/lookup", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
                 const std::vector<Json> entries = lookup_entries(*ctx.streams, lookup_ids(req));
                 send_json(res, Json(entries));
             }));
}

}  // namespace bee::server
