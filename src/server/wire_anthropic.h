// server/wire_anthropic: the Anthropic Messages API's wire shapes — a /v1/messages (or count_tokens) body
// read into a typed request (translated onto an OpenAI chat body, then prepared as a chat request), and
// the reply, SSE events, usage, stop_reason and error objects built from a task's output.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "runtime/task.h"
#include "server/http_util.h"
#include "server/response.h"
#include "server/wire_openai.h"

namespace bee::server {

// A /v1/messages request ready to run; 400 naming the field on a bad body (the route writes errors in
// Anthropic's shape).
TranslatedChatRequest read_anthropic_request(ServerContext& ctx, const Json& body);
// /v1/messages/count_tokens: the prompt's tokens through the template, as /v1/messages would run it.
std::vector<int32_t> read_anthropic_count_tokens(const ServerContext& ctx, const Json& body);

// The max_tokens used when a request leaves it out (Anthropic requires it; llama-server defaults it).
constexpr int64_t kAnthropicDefaultMaxTokens = 4096;

// system (a string or text blocks) → a system message; content blocks → text, reasoning_content
// (thinking), tool_calls (tool_use) and tool messages (tool_result); tools (input_schema → parameters),
// tool_choice (auto / any / tool / none), stop_sequences → stop, max_tokens, temperature, top_p, top_k,
// stream, thinking.budget_tokens, chat_template_kwargs. 400 naming the field on a wrong type.
Json anthropic_to_chat(const Json& body);

// "end_turn" (end of generation), "stop_sequence" (a stop string), "max_tokens" (token limit or full
// context), "tool_use" (the reply called a tool).
const char* anthropic_stop_reason(const runtime::FinishInfo& f, bool called_tools);
// {input_tokens (not read from the cache), cache_creation_input_tokens, cache_read_input_tokens, output_tokens}
Json anthropic_usage(const runtime::FinishInfo& f);
// A tool_use content block; `with_input` false gives the streaming start block (input {}).
Json anthropic_tool_use(const chat::ToolCall& c, bool with_input);

// The non-streaming reply: {id, type: "message", role, model, content: [thinking?, text?, tool_use*],
// stop_reason, stop_sequence, usage}.
Json anthropic_message(const std::string& id, const std::string& model, const std::string& reasoning,
                       const std::string& text, const std::vector<chat::ToolCall>& calls, const runtime::FinishInfo& f);

// The SSE events of a streamed reply: message_start, content blocks (thinking, text, tool_use) opened and
// closed in generation order, message_delta (stop_reason, usage), message_stop; errors in Anthropic's shape.
StreamFormat anthropic_stream_format(const ServerContext& ctx, const ChatRequest& cr, const std::string& id);

// Anthropic's error object: {"type": "error", "error": {"type", "message", "code"}}.
Json anthropic_error(int status, const std::string& type, const std::string& message);

}  // namespace bee::server
