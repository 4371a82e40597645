// server/routes_slots: POST /slots/{id}?action=save|restore|erase (llama-server's slot persistence).
// The request is read and checked by server/wire_native (slot id, action, file name); the work runs on
// the inference thread as a slot action (runtime/slot_save), once the slot is idle.
#include <memory>

#include "base/error.h"
#include "runtime/slot_save.h"
#include "server/response.h"
#include "server/routes.h"
#include "server/wire_native.h"

namespace bee::server {

namespace {

void handle_slot_action(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    if (ctx.params.slot_save_path.empty())
        throw HttpError(501, "not_supported_error",
                        "This server does not support slots action. Start it with `--slot-save-path`");
    const SlotActionRequest sr = read_slot_action_request(ctx, req);
    const std::string action = sr.action, path = ctx.params.slot_save_path + "/" + sr.filename;
    const int id_slot = sr.id_slot;
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
    send_json(res, slot_action_json(sr, *result));
}

}  // namespace

void register_slot_routes(RouteTable& svr, ServerContext& ctx) {
    svr.Post(R"(/slots/([^/]*))",
             guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_slot_action(ctx, q, r); }));
}

}  // namespace bee::server
