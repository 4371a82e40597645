// tests/fuzz/fuzz_chat: libFuzzer target for the Jinja interpreter; any input is a template that must
// parse and render (against a chat-like context) or throw bee::Error, never crash or hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "chat/template.h"

namespace {

const bee::chat::Json& context() {
    static const bee::chat::Json ctx = bee::chat::Json::parse(R"({
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Hi <think>?</think>"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call00001", "type": "function",
              "function": {"name": "f", "arguments": {"x": [1, 2.5, true, null]}}}]},
            {"role": "tool", "content": "{\"ok\": 1}"},
            {"role": "user", "content": [{"type": "text", "text": "parts"}]}
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false
    })");
    return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        std::string_view src(reinterpret_cast<const char*>(data), size);
        bee::chat::Template t = bee::chat::Template::parse(src);
        t.render(context(), 0);
    } catch (const bee::Error&) {}
    return 0;
}
