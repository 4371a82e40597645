// server/chat_prompt: an OpenAI `messages` request rendered into prompt text with the chat template
// (shared by /v1/chat/completions and /apply-template), plus how reasoning applies to it.
#pragma once
#include <string>

#include "server/context.h"
#include "server/http_util.h"

namespace bee::server {

struct ChatPrompt {
    std::string text;  // prompt text (a leading BOS the tokenizer adds itself is removed)
    ReasoningFormat format = ReasoningFormat::auto_;
    bool reasoning = false;            // split <think> spans (format is not none and the template thinks)
    bool starts_in_reasoning = false;  // the rendered prompt ends inside an opened <think>
};

// 400 on a malformed message list, bad chat_template_kwargs, or a template error. `allow_empty`: an
// empty `messages` is rendered (no turns) instead of refused.
ChatPrompt render_chat_prompt(const ServerContext& ctx, const Json& body, bool allow_empty = false);

}  // namespace bee::server
