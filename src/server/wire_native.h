// server/wire_native: llama-server's own wire shapes — /completion and /infill bodies read into a typed
// completion request, /tokenize, /detokenize and POST /slots/{id}?action= requests, and the native
// completion object and stream chunks, /tokenize's token list, the slot action's answer, and
// /lora-adapters' list and scales.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/slot_save.h"
#include "server/response.h"
#include "server/wire_generation.h"

namespace bee::server {

// /completion: `prompt` (one or several, see tokenize_prompts), `n` choices of each, the generation fields.
CompletionRequest read_native_completion_request(ServerContext& ctx, const Json& body);
// /infill: the FIM prompt built from input_prefix, input_suffix, input_extra and prompt (see wire_native.cpp),
// then as /completion. 501 when the vocabulary has no FIM tokens.
CompletionRequest read_infill_request(ServerContext& ctx, const Json& body);

// The final object of /completion (the non-stream body, or the last stream chunk, where content and tokens
// went out before) for task `t`, choice `index`; also the `__verbose` of the OpenAI replies when the request
// asks for `verbose`.
Json native_final(const ServerContext& ctx, const Task& t, const TaskResult& r, bool stream, size_t index);
// native_final, the non-stream body with response_fields only those paths.
Json native_completion_json(const ServerContext& ctx, const Task& t, const TaskResult& r, bool stream, size_t index);
// The stream of task `t`, choice `index`: {content, tokens, stop: false} chunks, then the final object; no [DONE].
StreamFormat native_stream_format(const ServerContext& ctx, std::shared_ptr<Task> t, size_t index);

// /tokenize: the text and how to tokenize it and answer.
struct TokenizeRequest {
    std::string content;
    bool add_special = false;   // add BOS/EOS as the vocabulary asks
    bool parse_special = true;  // special-token text becomes the special token
    bool with_pieces = false;   // answer {id, piece} objects instead of bare ids
};
TokenizeRequest read_tokenize_request(const Json& body);
// {"tokens": [...]}: ids, or {id, piece} with the piece as text (or its bytes when not valid UTF-8).
Json tokenize_json(const Tokenizer& tok, const std::vector<int32_t>& ids, bool with_pieces);
// /detokenize: `tokens`, ids in the vocabulary (400 otherwise; none given: empty).
std::vector<int32_t> read_detokenize_request(const Json& body, const Tokenizer& tok);

// POST /slots/{id}?action=save|restore|erase: the slot (in range), the action and, to save or restore, a
// plain file name (`filename` in the body). Call only with --slot-save-path set.
struct SlotActionRequest {
    int32_t id_slot = 0;
    std::string action;    // "save", "restore" or "erase"
    std::string filename;  // empty for erase
};
SlotActionRequest read_slot_action_request(const ServerContext& ctx, const httplib::Request& req);
// {id_slot, filename, n_saved / n_restored, n_written / n_read, timings}, or {id_slot, n_erased}.
Json slot_action_json(const SlotActionRequest& r, const SlotActionResult& result);

// The LoRA scales as llama-server reports them (generation_settings, /props): [{"id": i, "scale": s}, ...].
Json lora_scales_json(const std::vector<float>& scales);
// GET /lora-adapters: [{id, path, scale, task_name, prompt_prefix}] for each --lora adapter, at the scales of
// requests without a "lora" field.
Json lora_adapters_json(const ServerContext& ctx);
// POST /lora-adapters: a body [{"id": N, "scale": S}, ...] as one scale per adapter (those not listed 0).
std::vector<float> read_lora_adapters_request(const ServerContext& ctx, const httplib::Request& req);

}  // namespace bee::server
