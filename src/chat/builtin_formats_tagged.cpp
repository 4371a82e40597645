// chat/builtin_formats_tagged: built-in formats that wrap every turn in role markers (ChatML, Phi, Llama 3/4,
// GLM, Granite, Command R, EXAONE, Bailing, ...). System messages are turns of their own here, except where
// a format drops the roles it does not know (Command R and EXAONE keep only the roles they name).
#include "chat/builtin_formats.h"

namespace bee::chat::builtin {

namespace {

// prefix, then per turn: open + role + mid + content (trimmed if asked) + close; `gen` after the last turn
// when an assistant opening is asked for.
struct Wrapped {
    std::string_view prefix, open, mid, close, gen;
    bool trim_content = false;
};

constexpr Wrapped kChatml{"", "<|im_start|>", "\n", "<|im_end|>\n", "<|im_start|>assistant\n"};
constexpr Wrapped kPhi3{"", "<|", "|>\n", "<|end|>\n", "<|assistant|>\n"};
constexpr Wrapped kPhi4{"", "<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>"};
constexpr Wrapped kFalcon3{"", "<|", "|>\n", "\n", "<|assistant|>\n"};
constexpr Wrapped kZephyr{"", "<|", "|>\n", "<|endoftext|>\n", "<|assistant|>\n"};
constexpr Wrapped kLlama3{"",
                          "<|start_header_id|>",
                          "<|end_header_id|>\n\n",
                          "<|eot_id|>",
                          "<|start_header_id|>assistant<|end_header_id|>\n\n",
                          true};
constexpr Wrapped kLlama4{"",
                          "<|header_start|>",
                          "<|header_end|>\n\n",
                          "<|eot|>",
                          "<|header_start|>assistant<|header_end|>\n\n",
                          true};
constexpr Wrapped kChatglm3{"[gMASK]sop", "<|", "|>\n ", "", "<|assistant|>"};
constexpr Wrapped kChatglm4{"[gMASK]<sop>", "<|", "|>\n", "", "<|assistant|>\n"};
constexpr Wrapped kGlmEdge{"", "<|", "|>\n", "", "<|assistant|>"};
constexpr Wrapped kMegrez{"", "<|role_start|>", "<|role_end|>", "<|turn_end|>", "<|role_start|>assistant<|role_end|>"};
constexpr Wrapped kSolarOpen{"", "<|begin|>", "<|content|>", "<|end|>", "<|begin|>assistant"};

template <const Wrapped& W>
void wrapped(const Turns& chat, bool add_ass, std::string& out) {
    out += W.prefix;
    for (const Turn& t : chat) put(out, W.open, t.role, W.mid, W.trim_content ? trim(t.content) : t.content, W.close);
    if (add_ass) out += W.gen;
}

// AlphaMonarch: "<s>" opens every turn but the first (the tokenizer adds that one).
void monarch(const Turns& chat, bool add_ass, std::string& out) {
    for (size_t i = 0; i < chat.size(); i++)
        put(out, i == 0 ? "" : "<s>", chat[i].role, "\n", chat[i].content, "</s>\n");
    if (add_ass) out += "<s>assistant\n";
}

// Granite 3.x writes "<|tool_call|>" after the role "assistant_tool_call"; 4.0 and 4.1 name that role
// "assistant".
void granite(const Turns& chat, bool add_ass, std::string& out, bool v4) {
    for (const Turn& t : chat) {
        if (t.role == "assistant_tool_call")
            put(out, "<|start_of_role|>", v4 ? "assistant" : t.role, "<|end_of_role|><|tool_call|>");
        else put(out, "<|start_of_role|>", t.role, "<|end_of_role|>");
        put(out, t.content, "<|end_of_text|>\n");
    }
    if (add_ass) out += "<|start_of_role|>assistant<|end_of_role|>";
}

// gpt-oss (Harmony): an assistant turn ends with <|return|>, others with <|end|>.
void gpt_oss(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat)
        put(out, "<|start|>", t.role, "<|message|>", t.content, t.role == "assistant" ? "<|return|>" : "<|end|>");
    if (add_ass) out += "<|start|>assistant";
}

// Seed-OSS: assistant replies are trimmed.
void seed_oss(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat)
        put(out, "<seed:bos>", t.role, "\n", t.role == "assistant" ? trim(t.content) : t.content, "<seed:eos>");
    if (add_ass) out += "<seed:bos>assistant\n";
}

// Kimi K2: a tool result is a system-marked turn named "tool"; an unknown role keeps its content only.
void kimi_k2(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "system") out += "<|im_system|>system<|im_middle|>";
        else if (t.role == "user") out += "<|im_user|>user<|im_middle|>";
        else if (t.role == "assistant") out += "<|im_assistant|>assistant<|im_middle|>";
        else if (t.role == "tool") out += "<|im_system|>tool<|im_middle|>";
        put(out, t.content, "<|im_end|>");
    }
    if (add_ass) out += "<|im_assistant|>assistant<|im_middle|>";
}

// Command R: system, user and assistant turns (trimmed); other roles are dropped.
void command_r(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat) {
        const char* token = t.role == "system"      ? "<|SYSTEM_TOKEN|>"
                            : t.role == "user"      ? "<|USER_TOKEN|>"
                            : t.role == "assistant" ? "<|CHATBOT_TOKEN|>"
                                                    : nullptr;
        if (token) put(out, "<|START_OF_TURN_TOKEN|>", token, trim(t.content), "<|END_OF_TURN_TOKEN|>");
    }
    if (add_ass) out += "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>";
}

// EXAONE 3 / 4: "[|role|]" + trimmed content; a user turn ends with "\n" only. EXAONE 4 also has tool turns.
void exaone(const Turns& chat, bool add_ass, std::string& out, bool tool) {
    for (const Turn& t : chat) {
        if (t.role == "user") put(out, "[|user|]", trim(t.content), "\n");
        else if (t.role == "system" || t.role == "assistant" || (tool && t.role == "tool"))
            put(out, "[|", t.role, "|]", trim(t.content), "[|endofturn|]\n");
    }
    if (add_ass) out += "[|assistant|]";
}

// EXAONE MoE: "<|role|>\n" + trimmed content for system, user, assistant and tool turns.
void exaone_moe(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat)
        if (t.role == "system" || t.role == "user" || t.role == "assistant" || t.role == "tool")
            put(out, "<|", t.role, "|>\n", trim(t.content), "<|endofturn|>\n");
    if (add_ass) out += "<|assistant|>\n";
}

// Bailing's role names: user is HUMAN, any other role upper-cased (ASCII).
std::string bailing_role(const std::string& role) {
    if (role == "user") return "HUMAN";
    std::string r = role;
    for (char& c : r)
        if (c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
    return r;
}

// Bailing (Ling / Ring): "<role>ROLE</role>content"; the thinking variant opens <think> after the prompt.
void bailing(const Turns& chat, bool add_ass, std::string& out, bool think) {
    for (const Turn& t : chat) put(out, "<role>", bailing_role(t.role), "</role>", t.content);
    if (add_ass) put(out, "<role>ASSISTANT</role>", think ? "<think>" : "");
}

// Bailing 2 (Ling 2.0): turns end with <|role_end|>; without a leading system message a default one that
// turns thinking off comes first.
void bailing2(const Turns& chat, bool add_ass, std::string& out) {
    if (chat.empty() || chat[0].role != "system") out += "<role>SYSTEM</role>detailed thinking off<|role_end|>";
    for (const Turn& t : chat) put(out, "<role>", bailing_role(t.role), "</role>", t.content, "<|role_end|>");
    if (add_ass) out += "<role>ASSISTANT</role>";
}

constexpr Format kFormats[] = {
    {"chatml", wrapped<kChatml>},
    {"phi3", wrapped<kPhi3>},
    {"phi4", wrapped<kPhi4>},
    {"falcon3", wrapped<kFalcon3>},
    {"zephyr", wrapped<kZephyr>},
    {"monarch", monarch},
    {"llama3", wrapped<kLlama3>},
    {"llama4", wrapped<kLlama4>},
    {"chatglm3", wrapped<kChatglm3>},
    {"chatglm4", wrapped<kChatglm4>},
    {"glmedge", wrapped<kGlmEdge>},
    {"megrez", wrapped<kMegrez>},
    {"solar-open", wrapped<kSolarOpen>},
    {"granite", [](const Turns& c, bool a, std::string& o) { granite(c, a, o, false); }},
    {"granite-4.0", [](const Turns& c, bool a, std::string& o) { granite(c, a, o, true); }},
    {"granite-4.1", [](const Turns& c, bool a, std::string& o) { granite(c, a, o, true); }},
    {"gpt-oss", gpt_oss},
    {"seed_oss", seed_oss},
    {"kimi-k2", kimi_k2},
    {"command-r", command_r},
    {"exaone3", [](const Turns& c, bool a, std::string& o) { exaone(c, a, o, false); }},
    {"exaone4", [](const Turns& c, bool a, std::string& o) { exaone(c, a, o, true); }},
    {"exaone-moe", exaone_moe},
    {"bailing", [](const Turns& c, bool a, std::string& o) { bailing(c, a, o, false); }},
    {"bailing-think", [](const Turns& c, bool a, std::string& o) { bailing(c, a, o, true); }},
    {"bailing2", bailing2},
};

}  // namespace

std::span<const Format> tagged_formats() { return kFormats; }

}  // namespace bee::chat::builtin
