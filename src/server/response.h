// server/response: what the generation endpoints share on the way out — waiting for a task's result,
// the llama-server `timings` object, finish reasons, logprobs in OpenAI and native shapes, and the SSE
// driver that streams a task's events through a per-endpoint formatter.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/task.h"
#include "server/context.h"
#include "server/http_util.h"

namespace bee::server {

using namespace bee::runtime;  // the server speaks the runtime's task and slot types

// A finished task's whole output (non-streaming requests).
struct TaskResult {
    std::string content, reasoning;
    std::vector<TokenInfo> tokens;
    FinishInfo finish;
};

// Submits the task and waits for its end; throws HttpError if it ended with an error. If the client
// of `req` hangs up meanwhile, the task is cancelled.
TaskResult run_task(ServerContext& ctx, const httplib::Request& req, const std::shared_ptr<Task>& task);
// Several tasks at once (the `n` choices of one request): results in the same order. An error in any
// of them cancels the others.
std::vector<TaskResult> run_tasks(ServerContext& ctx, const httplib::Request& req,
                                  const std::vector<std::shared_ptr<Task>>& tasks);
// The finish record that `usage` and `timings` report for several tasks: each prompt counted once (fs holds
// consecutive groups of `per_prompt` choices of one prompt; 0: all of one prompt), the generated tokens
// summed, the longest generation time.
FinishInfo merge_finish(const std::vector<FinishInfo>& fs, size_t per_prompt = 0);

// llama-server's timings; draft_n and draft_n_accepted only when the request drafted, draft_n_grammar_cut
// (Bee's) only when its grammar cut drafts.
Json timings_json(const FinishInfo& f);
// llama-server's prompt_progress object: {total, cache, processed, time_ms}.
Json progress_json(const TaskEvent& e);
// The sampling fields under llama-server's names (generation_settings and /props), order as `samplers`.
Json sampling_json(const SamplingParams& s);
Json usage_json(const FinishInfo& f);
// The closing chunks of an OpenAI stream: `last` (it carries finish_reason), then, when the client asked
// for usage (stream_options.include_usage), `usage_chunk` (empty choices) with `usage`; the final chunk
// also carries llama-server's `timings`.
std::vector<Json> oai_final_chunks(Json last, Json usage_chunk, const FinishInfo& f, bool include_usage);
// "stop" (end of generation or stop string) or "length" (token limit or context full).
const char* finish_reason(const FinishInfo& f);
// An OpenAI choice gets stop_detail and stop_message when the end needs explaining (a grammar budget).
void add_stop_detail(Json& choice, const FinishInfo& f);
const char* stop_type_name(StopType t);

// OpenAI chat logprobs: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}].
Json oai_logprobs_content(const std::vector<TokenInfo>& tokens, const Tokenizer& tok);
// Native /completion: [{id, token, bytes, logprob, top_logprobs: [{id, token, bytes, logprob}]}].
Json native_probs(const std::vector<TokenInfo>& tokens, const Tokenizer& tok);

// Turns task events into SSE payloads for one endpoint.
struct StreamFormat {
    std::function<std::vector<Json>()> start;                  // sent before any token
    std::function<std::vector<Json>(const TaskEvent&)> delta;  // per delta event
    std::function<std::vector<Json>(const FinishInfo&)> done;  // at the end
    std::function<Json(const TaskEvent&)> progress;            // a prompt_progress event (may be unset)
    bool done_sentinel = true;                                 // "data: [DONE]" (OpenAI routes)
    bool event_names = false;  // each payload is preceded by "event: <its type field>" (Anthropic, Responses)
    std::function<Json(const TaskEvent&)> error;  // an error event's payload (unset: error_json)
};

// Submits the task and streams it. A failed write (client gone) cancels the task, unless the request
// carries X-Conversation-Id: then the stream is kept as a session (server/stream_sessions) and the
// generation runs to its end for a client that comes back.
void stream_task(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, std::shared_ptr<Task> task,
                 StreamFormat fmt);
// n choices in one stream: fmts[i] formats tasks[i] (their start chunks go first, in order); once every
// task is done, `after_all` adds closing payloads (the usage chunk), then fmts[0]'s [DONE] if any.
void stream_tasks(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                  std::vector<std::shared_ptr<Task>> tasks, std::vector<StreamFormat> fmts,
                  std::function<std::vector<Json>(const std::vector<FinishInfo>&)> after_all = {});

// The `after_all` of an n-choice OpenAI stream that asked for usage: one chunk (`empty_chunk`, a chunk
// with empty choices) carrying the merged usage and timings.
std::function<std::vector<Json>(const std::vector<FinishInfo>&)> usage_after_all(Json empty_chunk,
                                                                                 size_t per_prompt = 0);

// "chatcmpl-" / "cmpl-" followed by random hex.
std::string random_id(const char* prefix);

}  // namespace bee::server
