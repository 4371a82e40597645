// server/routes_infill: POST /infill, llama-server's fill-in-the-middle completion: the FIM prompt built
// by server/wire_native, then run as /completion.
#include "server/routes.h"
#include "server/wire_native.h"

namespace bee::server {

void register_infill_routes(RouteTable& svr, ServerContext& ctx) {
    svr.Post("/infill", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
                 complete_native(ctx, req, res, read_infill_request(ctx, parse_body(req)));
             }));
}

}  // namespace bee::server
