// chat/tool_calls: turns a model's generated text into OpenAI tool calls. The format is chosen from the
// chat template's text (the markers the template teaches the model), and the parser works incrementally
// so a streaming response can send ordinary text at once and hold back only what may be a call.
// Formats: Hermes / Qwen2.5 / Qwen3 `<tool_call>{json}</tool_call>`; Llama 3.x bare JSON
// `{"name":…,"parameters":…}` (optionally after `<|python_tag|>`); Mistral `[TOOL_CALLS][{…}]` and the
// newer `[TOOL_CALLS]name[ARGS]{…}`; and a generic fallback for any other template (the whole reply is
// one JSON value naming the call(s)). Text that does not parse as a call stays content: never an error.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace bee::chat {

enum class ToolCallFormat { hermes, llama3, mistral, generic };

// Picks the format from a chat template's source (see the header comment for the markers).
ToolCallFormat detect_tool_call_format(std::string_view template_source);
const char* tool_call_format_name(ToolCallFormat f);

struct ToolCall {
    std::string name;
    std::string arguments;  // a JSON object serialized as text (OpenAI's function.arguments)
    std::string id;         // as given by the model (Mistral), else empty: the server assigns one
};

// What one feed()/finish() step produced: text to show now, and calls completed now (in order).
struct ToolCallDelta {
    std::string content;
    std::vector<ToolCall> calls;
};

class ToolCallParser {
public:
    explicit ToolCallParser(ToolCallFormat f) : fmt_(f) {}

    // Appends generated text. Content is released as soon as it cannot be the start of a call; a
    // possible call opener is held back until it resolves (Hermes calls are emitted as each one closes).
    ToolCallDelta feed(std::string_view text);
    // End of generation: parses whatever is held; what is not a valid call is released as content.
    ToolCallDelta finish();

private:
    void release(ToolCallDelta& d, size_t n);
    std::string_view opener() const;
    bool anchored_start() const;
    void parse_held(ToolCallDelta& d, bool at_end);
    void take_calls(ToolCallDelta& d, std::vector<ToolCall>& calls);

    ToolCallFormat fmt_;
    std::string held_;           // text not yet released
    bool released_any_ = false;  // some non-blank content went out (bare-JSON formats no longer apply)
    bool in_call_ = false;       // held_ starts with a call opener (or, anchored formats, a JSON start)
    size_t n_calls_ = 0;         // calls emitted so far
};

// How a format writes its calls, so that a grammar can force one (tool_choice "required"): each call is
// call_open + {"name": …, "<args_key>": {…}} + call_close, the calls (one, or several when the format has a
// separator) sit between list_open and list_close. With args_open set (Mistral Small 3.2 / Devstral) a
// call is instead call_open + name + args_open + {…}, and calls simply follow each other. The parser
// above reads back exactly these shapes. note: markers such as [TOOL_CALLS] and [ARGS] are control
// tokens in Mistral vocabularies; the grammar writer emits them as whole tokens where the model has them.
struct ToolCallSyntax {
    std::string list_open, list_close;
    std::string call_open, call_close;
    std::string separator;  // between calls; empty: the format writes one call (unless args_open is set)
    std::string args_key;   // "arguments", or "parameters" (Llama 3.x)
    std::string args_open;  // "[ARGS]": the name-then-arguments form; empty: the JSON object form
};
// `template_source` tells the two Mistral forms apart: a template that writes [ARGS] teaches
// [TOOL_CALLS]name[ARGS]{…}; the older ones teach [TOOL_CALLS][{…}].
ToolCallSyntax tool_call_syntax(ToolCallFormat f, std::string_view template_source = {});
// Every marker text the parser reads for format f. Where a vocabulary has one as a control token, the
// server must decode that token as text (control tokens are otherwise dropped from replies).
std::vector<std::string> tool_call_markers(ToolCallFormat f);

// Whole-text convenience: feed(text) + finish() merged.
ToolCallDelta parse_tool_calls(ToolCallFormat f, std::string_view text);

}  // namespace bee::chat
