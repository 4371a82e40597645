// chat/template: a Jinja2-subset interpreter for the chat templates embedded in GGUF files
// (tokenizer.chat_template), and the helper that renders an OpenAI message list with one.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace bee::chat {

using Json = nlohmann::ordered_json;

class Template {
public:
    // Parses a Jinja template; throws bee::Error naming the line and column of a syntax error.
    static Template parse(std::string_view source);
    // A built-in format by name (`llama3`, `gemma`, ...: chat/builtin_templates.h) if `source` is one,
    // else parse(source): what select_template returns.
    static Template load(std::string_view source);

    // Renders with `context` (a JSON object) as the global variables (a built-in format reads only
    // `messages` and `add_generation_prompt`). Throws bee::Error on a render error (unknown filter,
    // raise_exception(...) from the template, type errors), with the message.
    std::string render(const Json& context) const;
    // Same, with strftime_now() formatting `now_unix` (UTC) instead of the current time.
    std::string render(const Json& context, int64_t now_unix) const;

    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;
    ~Template();

private:
    struct Impl;
    explicit Template(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// What a chat request gives the template (the names the templates in real GGUFs read).
struct ChatInput {
    Json messages = Json::array();  // OpenAI messages: role, content (string or parts), tool_calls, ...
    Json tools;                     // null, or an array of OpenAI tool definitions
    bool add_generation_prompt = true;
    Json kwargs = Json::object();  // chat_template_kwargs, e.g. {"enable_thinking": false}
    std::string bos_token, eos_token;
    int64_t now_unix = 0;  // time for strftime_now / date_string (UTC); 0 = now
};

// Limits on what a render's JSON context may hold (messages, tools, kwargs from a request): past them
// render() throws bee::Error naming the limit before converting anything.
struct InputLimits {
    static constexpr int kMaxDepth = 512;                        // nesting of arrays and objects
    static constexpr size_t kMaxValues = 200'000;                // keys, items and scalars together
    static constexpr size_t kMaxStringBytes = size_t(32) << 20;  // bytes of all strings and keys
};

// dst[key] = value for every entry of the object `src`, in linear time (ordered_json's own operator[]
// searches linearly, quadratic for a request with many keys).
void merge_object(Json& dst, const Json& src);

// Renders the prompt text for a chat request (the context also gets `date_string`,
// `strftime_now`, and every kwargs entry as a top-level variable, as llama.cpp does).
std::string apply(const Template& tmpl, const ChatInput& in);

}  // namespace bee::chat
