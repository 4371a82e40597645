// server/chat_request: an OpenAI chat body made ready to run — the tool mode (tools, tool_choice, the
// grammar that forces a call), the rendered prompt and its tokens, and the generation parameters.
// Shared by /v1/chat/completions and the APIs translated onto it (Anthropic Messages, OpenAI Responses).
#pragma once
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "server/chat_prompt.h"
#include "server/request.h"

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

// Keeps only the first call when the request turned parallel calls off; `n_sent` calls already went out.
std::vector<chat::ToolCall> limit_calls(std::vector<chat::ToolCall> calls, const ToolMode& m, size_t n_sent);

// Splits a finished reply into text and tool calls as the tool mode asks (no calls when it does not parse).
chat::ToolCallDelta split_tool_calls(const ToolMode& m, const std::string& content);

}  // namespace bee::server
