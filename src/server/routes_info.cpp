// server/routes_info: /health, /v1/models, /props and /slots — the server describing itself.
#include "server/http_util.h"
#include "server/idle_sleep.h"
#include "server/response.h"
#include "server/routes.h"
#include "server/wire_native.h"

namespace bee::server {

namespace {

Json model_info_loaded(const ServerContext& ctx) {
    const HParams& hp = ctx.model->hparams();
    const Tokenizer& tok = ctx.tokenizer();
    Json meta = {{"vocab_type", std::string(tok.model_name()) == "llama" ? 1 : 2},
                 {"n_vocab", tok.n_vocab()},
                 {"n_ctx_train", hp.n_ctx_train},
                 {"n_embd", hp.n_embd},
                 {"size", ctx.model->weight_bytes()}};
    Json m = {{"id", ctx.model_name}, {"aliases", ctx.model_aliases}, {"tags", ctx.model_tags},
              {"object", "model"},    {"created", ctx.created},       {"owned_by", "bee"},
              {"meta", meta}};
    return m;
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
    return out.empty() ? "none" : out;
}

Json default_settings(const ServerContext& ctx) {
    const SpecParams& sp = ctx.scheduler->spec_params();
    Json params = sampling_json(ctx.params.sampling);
    params["n_predict"] = ctx.params.n_predict;
    params["cache_prompt"] = ctx.params.cache_prompt;
    params["lora"] = lora_scales_json(ctx.lora_scales());
    Json out{{"n_ctx", ctx.scheduler->n_ctx_slot()}, {"params", params}};
    // The server's speculative settings, under llama-server's request keys (each can be overridden).
    Json& p = out["params"];
    p["speculative.type"] = join(sp.types);
    p["speculative.n_max"] = sp.draft_n_max;
    p["speculative.n_min"] = sp.draft_n_min;
    p["speculative.p_min"] = sp.draft_p_min;
    p["speculative.depth_policy"] = !sp.depth.adaptive ? "fixed" : sp.depth.controller;
    return out;
}

Json slots_json(const ServerContext& ctx) {
    Json out = Json::array();
    for (const SlotSnapshot& s : ctx.scheduler->slots())
        out.push_back({{"id", s.id},
                       {"id_task", s.processing ? (int64_t)s.task_id : -1},
                       {"n_ctx", s.n_ctx},
                       {"is_processing", s.processing},
                       {"is_prefilling", s.prefilling},
                       {"n_cached_tokens", s.n_cached},
                       {"n_prompt_tokens", s.n_prompt},
                       {"n_decoded", s.n_predicted},
                       {"speculative", !s.spec_types.empty()},
                       {"speculative.type", join(s.spec_types)}});
    return out;
}

}  // namespace

Json model_list_json(const ServerContext& ctx) {
    return Json{{"object", "list"}, {"data", Json::array({model_info_loaded(ctx)})}};
}

Json model_info_json(const ServerContext& ctx) {
    const IdleSleep::Hold awake = ctx.sleep ? ctx.sleep->peek() : nullptr;
    if (ctx.sleep && !awake) return ctx.sleep->cached_models()["data"][0];
    return model_info_loaded(ctx);
}

Json props_json(const ServerContext& ctx, bool sleeping) {
    Json caps = {{"supports_thinking", ctx.tmpl_source.find("<think>") != std::string::npos},
                 {"supports_tools", ctx.tmpl_source.find("tools") != std::string::npos}};
    return {{"default_generation_settings", default_settings(ctx)},
            {"total_slots", ctx.scheduler->n_parallel()},
            {"model_path", ctx.params.model_path},
            {"model_alias", ctx.model_name},
            {"chat_template", ctx.tmpl_source},
            {"chat_template_caps", caps},
            {"modalities", {{"vision", false}, {"audio", false}}},
            {"build_info", "bee"},
            {"is_sleeping", sleeping},
            {"cors_proxy_enabled", ctx.params.ui_mcp_proxy}};
}

void register_info_routes(RouteTable& svr, ServerContext& ctx) {
    auto health = guarded([](const httplib::Request&, httplib::Response& res) { send_json(res, {{"status", "ok"}}); });
    svr.Get("/health", health);
    svr.Get("/v1/health", health);
    // note: these two answer while the server sleeps (server/idle_sleep), from the replies kept before
    auto models = guarded([&ctx](const httplib::Request&, httplib::Response& res) {
        const IdleSleep::Hold awake = ctx.sleep ? ctx.sleep->peek() : nullptr;
        send_json(res, ctx.sleep && !awake ? ctx.sleep->cached_models() : model_list_json(ctx));
    });
    svr.Get("/models", models);
    svr.Get("/v1/models", models);
    svr.Get("/props", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
                const IdleSleep::Hold awake = ctx.sleep ? ctx.sleep->peek() : nullptr;
                send_json(res, ctx.sleep && !awake ? ctx.sleep->cached_props() : props_json(ctx, false));
            }));
    svr.Get("/slots", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
                if (!ctx.params.slots)
                    throw HttpError(501, "not_supported_error",
                                    "This server does not support slots endpoint. Start it without `--no-slots`");
                Json slots = slots_json(ctx);
                if (req.get_param_value("fail_on_no_slot") == "1") {
                    bool any_idle = false;
                    for (const Json& s : slots) any_idle |= !s["is_processing"].get<bool>();
                    if (!any_idle) throw HttpError(503, "unavailable_error", "no slot available");
                }
                send_json(res, slots);
            }));
}

}  // namespace bee::server
