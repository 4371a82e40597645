// server/wire_generation: the request fields every generation API shares (llama-server's set, read by the
// wire_* readers of /completion, /infill, /v1/completions and /v1/chat/completions, and through the chat
// translation by /v1/messages and /v1/responses) — sampling fields, n_predict / max_completion_tokens /
// max_tokens precedence, stop strings, logprobs, slot and cache options, reasoning and speculative
// overrides, grammar constraints, LoRA scales — into GenParams, the prompt (text, token ids or a mix) into tokens, and
// both into Tasks.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/task.h"
#include "server/context.h"
#include "server/http_util.h"

namespace bee::server {

using namespace bee::runtime;  // the server speaks the runtime's task and slot types

enum class Api { native, oai_completion, oai_chat };

// Validates and reads the generation fields of `body` (400 on a bad field).
GenParams parse_gen_params(const Json& body, const ServerContext& ctx, Api api);

// A list of {"id": N, "scale": S} (the "lora" field, POST /lora-adapters' body) as one scale per adapter,
// those not listed 0; 400 naming `where` for an unknown id or a scale that is not a finite number.
std::vector<float> parse_lora_list(const Json& list, size_t n_adapters, const char* where);

// `n` (alias n_cmpl): how many choices to generate, 1..kMaxChoices (400 otherwise).
constexpr int32_t kMaxChoices = 16;
int32_t parse_n_choices(const Json& body);

// Compiles GBNF into the generation's constraint (400 with the parser's line:column message).
void set_grammar(GenParams& g, const std::string& gbnf, const Tokenizer& tok);
// Each token's text for grammar matching, built once per model.
std::shared_ptr<const GrammarVocab> grammar_vocab(const Tokenizer& tok);

// A prompt: a string, an array of token ids, an array mixing strings and ids, or llama-server's object
// {"prompt_string": "..."} (a non-empty "multimodal_data" is refused: no projector here). BOS is added as
// the vocabulary asks; special-token text is parsed (as llama-server does).
std::vector<int32_t> tokenize_prompt(const Json& prompt, const Tokenizer& tok);
// `prompt` as llama-server reads it: a string, an array of token ids, an array mixing both, or an object is
// one prompt; an array of strings, or of such arrays or objects, is several (kMaxChoices at most), answered in order.
std::vector<std::vector<int32_t>> tokenize_prompts(const Json& prompt, const Tokenizer& tok);

// A completion-style request (/completion, /infill, /v1/completions) ready to run.
struct CompletionRequest {
    GenParams gen;
    int32_t n = 1;                             // choices per prompt
    std::vector<std::shared_ptr<Task>> tasks;  // prompt by prompt, n choices each
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage (OpenAI streams only)
    bool verbose = false;        // `verbose` (OpenAI only): the reply carries the native result as `__verbose`
};

// Builds the task; refuses (exceed_context_size_error) a prompt that does not fit the slot context.
std::shared_ptr<Task> make_task(ServerContext& ctx, std::vector<int32_t> prompt, GenParams params);
// n tasks for the n choices of one request; with a fixed seed, choice i samples with seed + i.
std::vector<std::shared_ptr<Task>> make_tasks(ServerContext& ctx, const std::vector<int32_t>& prompt,
                                              const GenParams& params, int32_t n);
// The tasks of several prompts, n choices each, prompt by prompt.
std::vector<std::shared_ptr<Task>> make_prompt_tasks(ServerContext& ctx,
                                                     const std::vector<std::vector<int32_t>>& prompts,
                                                     const GenParams& params, int32_t n);

}  // namespace bee::server
