// server/routes_lora: GET /lora-adapters (id, path, scale of each --lora adapter, as llama-server lists
// them) and POST /lora-adapters (the scales of requests without a "lora" field), and the per-request
// "lora" field they share the shape of: [{"id": N, "scale": S}, ...], adapters not listed at scale 0.
#include <cmath>

#include "base/error.h"
#include "server/request.h"
#include "server/routes.h"

namespace bee::server {

std::vector<float> parse_lora_list(const Json& list, size_t n_adapters, const char* where) {
    if (!list.is_array()) bad_request("%s must be an array of {\"id\": N, \"scale\": S} objects", where);
    std::vector<float> scales(n_adapters, 0.0f);
    for (const Json& e : list) {
        if (!e.is_object()) bad_request("%s must be an array of {\"id\": N, \"scale\": S} objects", where);
        const int64_t id = get_int(e, "id", -1);
        if (id < 0 || (uint64_t)id >= n_adapters) {
            if (n_adapters == 0)
                bad_request("%s: no LoRA adapter with id %lld: this server has none (load them with --lora FILE)",
                            where, (long long)id);
            bad_request("%s: no LoRA adapter with id %lld (ids are 0..%zu; GET /lora-adapters lists them)", where,
                        (long long)id, n_adapters - 1);
        }
        const double scale = get_number(e, "scale", 0.0);
        if (!std::isfinite(scale) || !std::isfinite((float)scale))
            bad_request("%s: the scale of adapter %lld must be a finite number", where, (long long)id);
        scales[(size_t)id] = (float)scale;
    }
    return scales;
}

Json lora_scales_json(const std::vector<float>& scales) {
    Json out = Json::array();
    for (size_t i = 0; i < scales.size(); i++) out.push_back({{"id", i}, {"scale", scales[i]}});
    return out;
}

void register_lora_routes(httplib::Server& svr, ServerContext& ctx) {
    svr.Get("/lora-adapters", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
                const std::vector<float> scales = ctx.lora_scales();
                Json out = Json::array();
                const auto& adapters = ctx.engine->lora_adapters();
                for (size_t i = 0; i < adapters.size(); i++)
                    out.push_back({{"id", i},
                                   {"path", adapters[i]->path()},
                                   {"scale", scales[i]},
                                   {"task_name", adapters[i]->task_name()},
                                   {"prompt_prefix", adapters[i]->prompt_prefix()}});
                send_json(res, out);
            }));
    svr.Post("/lora-adapters", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
                 const Json body = parse_json_bounded(req.body, kMaxJsonDepth);
                 if (!body.is_array()) bad_request("Request body must be an array");
                 ctx.set_lora_scales(parse_lora_list(body, ctx.engine->lora_adapters().size(), "the body"));
                 send_json(res, {{"success", true}});
             }));
}

}  // namespace bee::server
