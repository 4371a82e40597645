// server/routes: one registration function per endpoint group (one .cpp each).
#pragma once
#include <httplib.h>

#include "server/context.h"
#include "server/http_util.h"
#include "server/route_table.h"
#include "server/wire_generation.h"

namespace bee::server {

void register_completion_routes(RouteTable& svr, ServerContext& ctx);  // /completion, /v1/completions
void register_chat_routes(RouteTable& svr, ServerContext& ctx);        // /v1/chat/completions
void register_info_routes(RouteTable& svr, ServerContext& ctx);        // /health /v1/models /props /slots
void register_slot_routes(RouteTable& svr, ServerContext& ctx);        // POST /slots/{id}?action=...
void register_tokenize_routes(RouteTable& svr, ServerContext& ctx);    // /tokenize /detokenize /apply-template
void register_metrics_routes(RouteTable& svr, ServerContext& ctx);     // /metrics
void register_page_routes(RouteTable& svr, ServerContext& ctx);        // / (chat page)
void register_infill_routes(RouteTable& svr, ServerContext& ctx);      // /infill
void register_anthropic_routes(RouteTable& svr, ServerContext& ctx);   // /v1/messages (Anthropic)
void register_responses_routes(RouteTable& svr, ServerContext& ctx);   // /v1/responses (OpenAI)
void register_embedding_routes(RouteTable& svr, ServerContext& ctx);   // /v1/embeddings /embedding(s) /rerank
void register_lora_routes(RouteTable& svr, ServerContext& ctx);        // /lora-adapters
void register_stream_routes(RouteTable& svr, ServerContext& ctx);      // /v1/stream /v1/streams/lookup
// Every group above, bound to one model's context (the whole API of a single-model server).
void register_model_routes(RouteTable& svr, ServerContext& ctx);
// One /v1/models entry for the loaded model: id, object, created, owned_by, meta (while the server
// sleeps: the entry kept from before).
Json model_info_json(const ServerContext& ctx);
// GET /v1/models and GET /props of a loaded model (the caller holds it awake).
Json model_list_json(const ServerContext& ctx);
Json props_json(const ServerContext& ctx, bool sleeping);
// Settles --embedding / --reranking / --pooling against the loaded model (pooling from the file when not
// given); throws Error when rank pooling is asked of a model without a classification head.
void resolve_embedding_options(ServerContext& ctx);

// Runs a native completion request (read from /completion or /infill): stream or not, n choices per prompt.
void complete_native(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                     const CompletionRequest& cr);

// Wraps a handler: HttpError becomes its JSON error, any other exception a 500 — never a crash.
httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn);

}  // namespace bee::server
