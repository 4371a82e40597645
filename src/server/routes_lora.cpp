// server/routes_lora: GET /lora-adapters (id, path, scale of each --lora adapter, as llama-server lists
// them) and POST /lora-adapters (the scales of requests without a "lora" field); shapes in wire_native.
// In router mode each model has its own adapters and scales (the route table is per model).
#include "server/routes.h"
#include "server/wire_native.h"

namespace bee::server {

void register_lora_routes(RouteTable& svr, ServerContext& ctx) {
    svr.Get("/lora-adapters", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
                send_json(res, lora_adapters_json(ctx));
            }));
    svr.Post("/lora-adapters", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
                 ctx.set_lora_scales(read_lora_adapters_request(ctx, req));
                 send_json(res, {{"success", true}});
             }));
}

}  // namespace bee::server
