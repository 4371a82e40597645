// server/routes_slots: POST /slots/{id}?action=save|restore|erase (llama-server's slot persistence).
// The request is checked here (slot id, action, file name); the work runs on the inference thread as
// a slot action (runtime/slot_save), once the slot is idle.
#include <memory>

#include "base/error.h"
#include "runtime/slot_save.h"
#include "server/response.h"
#include "server/routes.h"

namespace bee::server {

namespace {

void handle_slot_action(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    if (ctx.params.slot_save_path.empty())
        throw HttpError(501, "not_supported_error",
                        "This server does not support slots action. Start it with `--slot-save-path`");
    const std::string id_text = req.matches[1];
    if (id_text.empty() || id_text.size() > 4 || id_text.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(id_text) >= ctx.scheduler->n_parallel())
        bad_request("Invalid slot ID '%s': slots are 0..%d", id_text.c_str(), ctx.scheduler->n_parallel() - 1);
    const int id_slot = std::stoi(id_text);
    const std::string action = req.get_param_value("action");
    if (action != "save" && action != "restore" && action != "erase")
        bad_request("Invalid action '%s': expected ?action=save, restore or erase", action.c_str());
    std::string filename, path;
    if (action != "erase") {
        const Json body = parse_body(req);
        filename = get_string(body, "filename", "");
        if (filename.empty()) bad_request("'filename' is required for action=%s", action.c_str());
        if (!valid_slot_filename(filename))
            bad_request("Invalid filename '%s': give a plain file name (no path separators, no '..')",
                        filename.c_str());
        path = ctx.params.slot_save_path + "/" + filename;
    }
    auto task = std::make_shared<Task>();
    task->id = ctx.next_task_id++;
    task->params.id_slot = id_slot;
    auto result = std::make_shared<SlotActionResult>();
    std::string tag = slot_model_tag(ctx.model->describe(), ctx.tokenizer().n_vocab());
    for (const auto& a : ctx.engine->lora_adapters()) tag += ", LoRA " + a->path();  // the scales are in the state
    task->slot_action = [action, path, tag, id_slot, result,
                         channel = task->channel](SeqMemory& mem, std::vector<int32_t>& cache, int32_t n_ctx_slot) {
        if (action == "save") *result = slot_save(mem, id_slot, cache, path, tag);
        else if (action == "restore") *result = slot_restore(mem, id_slot, cache, n_ctx_slot, path, tag);
        else *result = slot_erase(mem, id_slot, cache);
        TaskEvent done;
        done.kind = TaskEvent::done;
        channel->push(std::move(done));
    };
    run_task(ctx, req, task);  // a failed action comes back as its 400 error
    Json j;
    if (action == "save")
        j = {{"id_slot", id_slot},
             {"filename", filename},
             {"n_saved", result->n_tokens},
             {"n_written", result->n_bytes},
             {"timings", {{"save_ms", result->ms}}}};
    else if (action == "restore")
        j = {{"id_slot", id_slot},
             {"filename", filename},
             {"n_restored", result->n_tokens},
             {"n_read", result->n_bytes},
             {"timings", {{"restore_ms", result->ms}}}};
    else j = {{"id_slot", id_slot}, {"n_erased", result->n_tokens}};
    send_json(res, j);
}

}  // namespace

void register_slot_routes(httplib::Server& svr, ServerContext& ctx) {
    svr.Post(R"(/slots/([^/]*))",
             guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_slot_action(ctx, q, r); }));
}

}  // namespace bee::server
