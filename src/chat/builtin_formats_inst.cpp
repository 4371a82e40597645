// chat/builtin_formats_inst: the [INST] family of built-in formats (Llama 2 and its variants, Mistral v1,
// v3, v3-tekken, v7, v7-tekken). None of them has an assistant opening: `add_ass` is ignored.
#include "chat/builtin_formats.h"

namespace bee::chat::builtin {

std::string trim(std::string_view s) {
    constexpr std::string_view kSpace = " \t\n\v\f\r";
    const size_t from = s.find_first_not_of(kSpace);
    if (from == std::string_view::npos) return "";
    return std::string(s.substr(from, s.find_last_not_of(kSpace) - from + 1));
}

namespace {

// Llama 2: "[INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST]assistant</s>[INST] ...". Without system support
// the system text opens the first turn followed by "\n"; `bos_inside` opens later turns with "<s>";
// `strip` trims every message.
void llama2(const Turns& chat, std::string& out, bool system, bool bos_inside, bool strip) {
    bool inside_turn = true;
    out += "[INST] ";
    for (const Turn& t : chat) {
        const std::string content = strip ? trim(t.content) : t.content;
        if (!inside_turn) {
            inside_turn = true;
            out += bos_inside ? "<s>[INST] " : "[INST] ";
        }
        if (t.role == "system") {
            if (system) put(out, "<<SYS>>\n", content, "\n<</SYS>>\n\n");
            else put(out, content, "\n");
        } else if (t.role == "user") {
            put(out, content, " [/INST]");
        } else {
            put(out, content, "</s>");
            inside_turn = false;
        }
    }
}

// Mistral v1 / v3 / v3-tekken: system text goes inside the next [INST] turn, followed by "\n\n".
// v1 puts a space before [INST] and [/INST]; v3 and v1 a space after [INST] and before the reply; v3 trims
// the reply.
void mistral_v1_v3(const Turns& chat, std::string& out, std::string_view lead, std::string_view trail,
                   bool trim_reply) {
    bool inside_turn = false;
    for (const Turn& t : chat) {
        if (!inside_turn) {
            put(out, lead, "[INST]", trail);
            inside_turn = true;
        }
        if (t.role == "system") {
            put(out, t.content, "\n\n");
        } else if (t.role == "user") {
            put(out, t.content, lead, "[/INST]");
        } else {
            put(out, trail, trim_reply ? trim(t.content) : t.content, "</s>");
            inside_turn = false;
        }
    }
}

// Mistral v7 (space after each opening marker) and v7-tekken (none): [SYSTEM_PROMPT] as its own block.
void mistral_v7(const Turns& chat, std::string& out, std::string_view space) {
    for (const Turn& t : chat) {
        if (t.role == "system") put(out, "[SYSTEM_PROMPT]", space, t.content, "[/SYSTEM_PROMPT]");
        else if (t.role == "user") put(out, "[INST]", space, t.content, "[/INST]");
        else put(out, space, t.content, "</s>");
    }
}

constexpr Format kFormats[] = {
    {"llama2", [](const Turns& c, bool, std::string& o) { llama2(c, o, false, false, false); }},
    {"llama2-sys", [](const Turns& c, bool, std::string& o) { llama2(c, o, true, false, false); }},
    {"llama2-sys-bos", [](const Turns& c, bool, std::string& o) { llama2(c, o, true, true, false); }},
    {"llama2-sys-strip", [](const Turns& c, bool, std::string& o) { llama2(c, o, true, false, true); }},
    {"mistral-v1", [](const Turns& c, bool, std::string& o) { mistral_v1_v3(c, o, " ", " ", false); }},
    {"mistral-v3", [](const Turns& c, bool, std::string& o) { mistral_v1_v3(c, o, "", " ", true); }},
    {"mistral-v3-tekken", [](const Turns& c, bool, std::string& o) { mistral_v1_v3(c, o, "", "", false); }},
    {"mistral-v7", [](const Turns& c, bool, std::string& o) { mistral_v7(c, o, " "); }},
    {"mistral-v7-tekken", [](const Turns& c, bool, std::string& o) { mistral_v7(c, o, ""); }},
};

}  // namespace

std::span<const Format> inst_formats() { return kFormats; }

}  // namespace bee::chat::builtin
