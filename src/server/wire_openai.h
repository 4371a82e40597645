// server/wire_openai: the OpenAI wire shapes of /v1/chat/completions and /v1/completions — a body read
// into a typed request (a chat body: the tool mode, the grammar that forces a call, the rendered prompt
// and its tokens, the generation parameters; then the tasks), and the reply and SSE chunks built from the
// tasks' output. The chat request is shared by the APIs translated onto it (Anthropic Messages, OpenAI
// Responses).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "server/chat_prompt.h"
#include "server/response.h"
#include "server/wire_generation.h"

namespace bee::server {

// How the request wants tool calls handled: parse them out of the reply (tools given, tool_choice not
// "none", parse_tool_calls not false), and whether more than one call may be returned.
struct ToolMode {
    bool parse = false;
    bool parallel = true;
    bool force = false;  // tool_choice "required" or a named function: a grammar forces a call
    std::string only;    // the named function (tool_choice {"type": "function", ...}), else empty
    chat::ToolCallFormat format = chat::ToolCallFormat::generic;
    chat::ToolCallSyntax syntax;  // how a forced call is written (the format's shape for this template)
};

// What a chat body becomes before it is submitted.
struct ChatRequest {
    ToolMode tools;
    ChatPrompt prompt;
    GenParams gen;
    std::vector<int32_t> tokens;  // the rendered prompt, tokenized
};

// Validates and prepares an OpenAI chat body (400 on a bad field, tool or template error).
// `allow_empty_messages`: an empty `messages` renders the template with no turns (llama-server's
// Anthropic endpoint accepts it).
ChatRequest prepare_chat(ServerContext& ctx, const Json& body, bool allow_empty_messages = false);

// A /v1/chat/completions request ready to run.
struct ChatCompletionRequest {
    ChatRequest chat;
    int32_t n = 1;                             // choices
    std::vector<std::shared_ptr<Task>> tasks;  // one per choice
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage (streams only)
    bool verbose = false;        // llama-server's `verbose` (default -v): the reply carries `__verbose`
};
ChatCompletionRequest read_chat_completion_request(ServerContext& ctx, const Json& body);
// /v1/chat/completions/input_tokens: the prompt's tokens, the body read and prepared as the chat route does.
std::vector<int32_t> read_chat_input_tokens_request(ServerContext& ctx, const Json& body);
// A /v1/completions request ready to run (CompletionRequest: n choices of each prompt).
CompletionRequest read_oai_completion_request(ServerContext& ctx, const Json& body);

// A body of another API translated onto a chat body (Anthropic Messages, OpenAI Responses), ready to
// run as one task.
struct TranslatedChatRequest {
    ChatRequest chat;
    std::shared_ptr<Task> task;  // the task to submit (refused if the prompt does not fit)
    bool stream = false;
};
TranslatedChatRequest prepare_translated_chat(ServerContext& ctx, const Json& chat_body, bool allow_empty_messages);
// The tokens a chat body's prompt renders to, as it would run (count_tokens, input_tokens).
std::vector<int32_t> chat_prompt_tokens(const ServerContext& ctx, const Json& chat_body, bool allow_empty_messages);

// Keeps only the first call when the request turned parallel calls off; `n_sent` calls already went out.
std::vector<chat::ToolCall> limit_calls(std::vector<chat::ToolCall> calls, const ToolMode& m, size_t n_sent);

// Splits a finished reply into text and tool calls as the tool mode asks (no calls when it does not parse).
chat::ToolCallDelta split_tool_calls(const ToolMode& m, const std::string& content);

// Chat replies: the whole chat.completion object, and one chat.completion.chunk around `choices`.
// `verbose`: the task of choice 0, whose native result (wire_native's native_final) the reply carries as
// `__verbose` (null: none).
Json chat_completion_json(const ServerContext& ctx, const std::string& id, int64_t created, const ChatRequest& cr,
                          const std::vector<TaskResult>& rs, const Task* verbose);
Json chat_chunk(const ServerContext& ctx, const std::string& id, int64_t created, Json choices);
// The SSE chunks of choice `index`. `include_usage`: this (single) choice closes with the usage chunk.
// `verbose`: the task whose native result the first closing chunk carries as `__verbose` (null: none).
StreamFormat chat_stream_format(ServerContext& ctx, const std::string& id, int64_t created, const ToolMode& tools,
                                bool want_logprobs, int index, bool include_usage, std::shared_ptr<Task> verbose);

// Text completion replies: the whole text_completion object (`n` choices per prompt), and one chunk.
// `verbose` as for chat_completion_json.
Json oai_text_completion_json(const ServerContext& ctx, const std::string& id, int64_t created,
                              const std::vector<TaskResult>& rs, int32_t n, bool want_logprobs, const Task* verbose);
Json oai_text_chunk(const ServerContext& ctx, const std::string& id, int64_t created, Json choice);
// The SSE chunks of choice `index`. `include_usage`: this (single) choice closes with the usage chunk.
// `verbose`: the task whose native result the closing chunk carries as `__verbose` (null: none).
StreamFormat oai_text_stream_format(ServerContext& ctx, const std::string& id, int64_t created, bool want_logprobs,
                                    int index, bool include_usage, std::shared_ptr<Task> verbose);

}  // namespace bee::server
