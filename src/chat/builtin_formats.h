// chat/builtin_formats: llama.cpp's built-in chat formats (`--chat-template llama3`, ...), written as small
// C++ formatters over (role, content) turns, byte for byte as llama.cpp's llama_chat_apply_template renders
// them. One file per family: builtin_formats_inst (the [INST] family), builtin_formats_tagged (turns wrapped
// in role markers), builtin_formats_prose (role names as prose, system text merged into a turn or dropped).
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bee::chat::builtin {

struct Turn {
    std::string role, content;
};
using Turns = std::vector<Turn>;

// One named format: appends the prompt for `chat` to `out`; `add_ass` ends it with the assistant's opening
// (formats that have none ignore it, as llama.cpp does).
struct Format {
    const char* name;
    void (*write)(const Turns& chat, bool add_ass, std::string& out);
};

std::span<const Format> inst_formats();
std::span<const Format> tagged_formats();
std::span<const Format> prose_formats();

// `s` without leading and trailing ASCII whitespace (" \t\n\v\f\r", C's isspace), as llama.cpp trims.
std::string trim(std::string_view s);

// out += each of `parts`.
template <class... S>
void put(std::string& out, const S&... parts) {
    (out.append(parts), ...);
}

}  // namespace bee::chat::builtin
