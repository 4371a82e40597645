// server/wire_responses: the OpenAI Responses API's wire shapes — a /v1/responses (or input_tokens) body
// read into a typed request (translated onto an OpenAI chat body, then prepared as a chat request), and
// the output items, SSE events, usage and response object built from a task's output.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "runtime/task.h"
#include "server/http_util.h"
#include "server/response.h"
#include "server/wire_openai.h"

namespace bee::server {

// A /v1/responses request ready to run; 400 naming the field on a bad body.
TranslatedChatRequest read_responses_request(ServerContext& ctx, const Json& body);
// /v1/responses/input_tokens: the prompt's tokens through the template, as /v1/responses would run it.
std::vector<int32_t> read_responses_input_tokens(const ServerContext& ctx, const Json& body);

// instructions → a system message; input (a string, or items: messages with input_text / output_text
// parts, function_call, function_call_output, reasoning) → messages; function tools → chat tools (other
// tool types are skipped); tool_choice; max_output_tokens → max_tokens; text.format → response_format;
// the remaining generation fields (temperature, top_p, stream, seed, parallel_tool_calls, llama-server's
// extensions) pass through. 400 naming the field on a wrong type or an unsupported item.
Json responses_to_chat(const Json& body);

// Output items; `status` is "in_progress" or "completed".
Json responses_reasoning_item(const std::string& id, const std::string& text, const char* status);
Json responses_message_item(const std::string& id, const std::string& text, const char* status);
// A function_call item for `c` (item id "fc_…", call_id the call's id or a fresh "call_…").
Json responses_call_item(const chat::ToolCall& c, const char* status);

// {input_tokens, input_tokens_details.cached_tokens, output_tokens, output_tokens_details.reasoning_tokens,
// total_tokens}
Json responses_usage(const runtime::FinishInfo& f);

// The response object. With `f` it is finished: status "completed", or "incomplete" with
// incomplete_details.reason "max_output_tokens" when the token limit (or the context) ended it, and usage;
// without, "in_progress".
Json responses_object(const std::string& id, int64_t created, const std::string& model, Json output,
                      const runtime::FinishInfo* f);

// The output items of a finished reply: reasoning, the message, then each call.
Json responses_output_items(const std::string& reasoning, const chat::ToolCallDelta& d);

// The SSE events of a streamed response: response.created / in_progress, each output item added, its
// deltas and done events in generation order (reasoning, message, function calls), response.completed;
// every event carries sequence_number.
StreamFormat responses_stream_format(const ServerContext& ctx, const ChatRequest& cr, const std::string& id);

}  // namespace bee::server
