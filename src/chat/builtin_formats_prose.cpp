// chat/builtin_formats_prose: built-in formats that name the speaker in prose ("USER: ", "Human: ") or with
// per-role markers, and treat system text their own way: merged into the first user turn (Gemma, Orion),
// written bare before the turns (Vicuna, DeepSeek), kept only when it comes first (GigaChat, Hunyuan) or
// dropped (Yandex). Roles a format does not name are dropped unless noted.
#include "chat/builtin_formats.h"

namespace bee::chat::builtin {

namespace {

// Gemma: no system turn; the system texts (trimmed, concatenated) open the next non-model turn.
void gemma(const Turns& chat, bool add_ass, std::string& out) {
    std::string system;
    for (const Turn& t : chat) {
        if (t.role == "system") {
            system += trim(t.content);
            continue;
        }
        const std::string& role = t.role == "assistant" ? std::string("model") : t.role;
        put(out, "<start_of_turn>", role, "\n");
        if (!system.empty() && role != "model") {
            put(out, system, "\n\n");
            system.clear();
        }
        put(out, trim(t.content), "<end_of_turn>\n");
    }
    if (add_ass) out += "<start_of_turn>model\n";
}

// Orion: the system text opens the next user turn; a user turn already ends with the assistant's opening.
void orion(const Turns& chat, bool, std::string& out) {
    std::string system;
    for (const Turn& t : chat) {
        if (t.role == "system") {
            system += t.content;
        } else if (t.role == "user") {
            out += "Human: ";
            if (!system.empty()) {
                put(out, system, "\n\n");
                system.clear();
            }
            put(out, t.content, "\n\nAssistant: </s>");
        } else {
            put(out, t.content, "</s>");
        }
    }
}

// OpenChat 3.5: "GPT4 Correct Role: " with the role's first letter upper-cased; system text bare.
void openchat(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "system") {
            put(out, t.content, "<|end_of_turn|>");
            continue;
        }
        std::string role = t.role;
        if (!role.empty() && role[0] >= 'a' && role[0] <= 'z') role[0] = char(role[0] - 'a' + 'A');
        put(out, "GPT4 Correct ", role, ": ", t.content, "<|end_of_turn|>");
    }
    if (add_ass) out += "GPT4 Correct Assistant:";
}

// Vicuna 1.1, and its Orca variant that labels the system text "SYSTEM: ".
void vicuna(const Turns& chat, bool add_ass, std::string& out, bool orca) {
    for (const Turn& t : chat) {
        if (t.role == "system") put(out, orca ? "SYSTEM: " : "", t.content, orca ? "\n" : "\n\n");
        else if (t.role == "user") put(out, "USER: ", t.content, "\n");
        else if (t.role == "assistant") put(out, "ASSISTANT: ", t.content, "</s>\n");
    }
    if (add_ass) out += "ASSISTANT:";
}

// DeepSeek Coder: system text bare, then "### Instruction:" / "### Response:" blocks.
void deepseek(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "system") out += t.content;
        else if (t.role == "user") put(out, "### Instruction:\n", t.content, "\n");
        else if (t.role == "assistant") put(out, "### Response:\n", t.content, "\n<|EOT|>\n");
    }
    if (add_ass) out += "### Response:\n";
}

constexpr const char* kDeepseekEos = "<｜end▁of▁sentence｜>";

// DeepSeek V2: "User: " / "Assistant: " paragraphs after the bare system text.
void deepseek2(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "system") put(out, t.content, "\n\n");
        else if (t.role == "user") put(out, "User: ", t.content, "\n\n");
        else if (t.role == "assistant") put(out, "Assistant: ", t.content, kDeepseekEos);
    }
    if (add_ass) out += "Assistant:";
}

// DeepSeek V3 (and R1): <｜User｜> / <｜Assistant｜> markers after the bare system text.
void deepseek3(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "system") put(out, t.content, "\n\n");
        else if (t.role == "user") put(out, "<｜User｜>", t.content);
        else if (t.role == "assistant") put(out, "<｜Assistant｜>", t.content, kDeepseekEos);
    }
    if (add_ass) out += "<｜Assistant｜>";
}

// DeepSeek OCR: no template; the contents one after the other.
void deepseek_ocr(const Turns& chat, bool, std::string& out) {
    for (const Turn& t : chat) out += t.content;
}

// MiniCPM: "<用户>" + user text + "<AI>", any other text bare; all trimmed.
void minicpm(const Turns& chat, bool, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "user") put(out, "<用户>", trim(t.content), "<AI>");
        else out += trim(t.content);
    }
}

// RWKV World: paragraphs ending in "\n\n" (the model's end of turn); a last user turn is followed by
// "Assistant:" whatever `add_ass` says.
void rwkv_world(const Turns& chat, bool, std::string& out) {
    for (size_t i = 0; i < chat.size(); i++) {
        const Turn& t = chat[i];
        if (t.role == "system") put(out, "System: ", trim(t.content), "\n\n");
        else if (t.role == "assistant") put(out, "Assistant: ", trim(t.content), "\n\n");
        else if (t.role == "user") {
            put(out, "User: ", trim(t.content), "\n\n");
            if (i + 1 == chat.size()) out += "Assistant:";
        }
    }
}

// GigaChat: a leading system message right after "<s>"; each user turn declares no functions.
void gigachat(const Turns& chat, bool add_ass, std::string& out) {
    const bool has_system = !chat.empty() && chat[0].role == "system";
    out += "<s>";
    if (has_system) put(out, chat[0].content, "<|message_sep|>");
    for (size_t i = has_system ? 1 : 0; i < chat.size(); i++) {
        const Turn& t = chat[i];
        if (t.role == "user")
            put(out, "user<|role_sep|>", t.content, "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>");
        else if (t.role == "assistant") put(out, "assistant<|role_sep|>", t.content, "<|message_sep|>");
    }
    if (add_ass) out += "assistant<|role_sep|>";
}

// YandexGPT: system text is dropped; "\n\n" ends a turn.
void yandex(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "user") put(out, " Пользователь: ", t.content, "\n\n");
        else if (t.role == "assistant") put(out, " Ассистент: ", t.content, "\n\n");
    }
    if (add_ass) out += " Ассистент:[SEP]";
}

// SmolVLM: <|im_start|> once as BOS, then prose turns; any role but system and user speaks as Assistant.
void smolvlm(const Turns& chat, bool add_ass, std::string& out) {
    out += "<|im_start|>";
    for (const Turn& t : chat) {
        if (t.role == "system") put(out, t.content, "\n\n");
        else if (t.role == "user") put(out, "User: ", t.content, "<end_of_utterance>\n");
        else put(out, "Assistant: ", t.content, "<end_of_utterance>\n");
    }
    if (add_ass) out += "Assistant:";
}

// Hunyuan A13B: markers after the text; any role but system and assistant is a user turn.
void hunyuan_moe(const Turns& chat, bool, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "system") put(out, "<|startoftext|>", t.content, "<|extra_4|>");
        else if (t.role == "assistant") put(out, t.content, "<|eos|>");
        else put(out, "<|startoftext|>", t.content, "<|extra_0|>");
    }
}

constexpr const char* kHunyuanSystemEnd = "<｜hy_place▁holder▁no▁3｜>";

// Hunyuan dense (4B): a system message counts only as the first one; a user turn opens the assistant's.
void hunyuan_dense(const Turns& chat, bool, std::string& out) {
    for (size_t i = 0; i < chat.size(); i++) {
        const Turn& t = chat[i];
        if (i == 0 && t.role == "system") put(out, t.content, kHunyuanSystemEnd);
        if (t.role == "assistant") put(out, "<｜hy_Assistant｜>", t.content, "<｜hy_place▁holder▁no▁2｜>");
        else if (t.role == "user") put(out, "<｜hy_User｜>", t.content, "<｜hy_Assistant｜>");
    }
}

// Hunyuan VL / OCR: a BOS marker, then each text followed by its role's marker; system only first.
void hunyuan_vl(const Turns& chat, bool, std::string& out) {
    out += "<｜hy_begin▁of▁sentence｜>";
    for (size_t i = 0; i < chat.size(); i++) {
        const Turn& t = chat[i];
        if (i == 0 && t.role == "system") put(out, t.content, kHunyuanSystemEnd);
        else if (t.role == "user") put(out, t.content, "<｜hy_User｜>");
        else if (t.role == "assistant") put(out, t.content, "<｜hy_Assistant｜>");
    }
}

// Grok 2: "System: " / "Human: " (trimmed) and "Assistant: " (as is) paragraphs.
void grok2(const Turns& chat, bool add_ass, std::string& out) {
    for (const Turn& t : chat) {
        if (t.role == "system") put(out, "System: ", trim(t.content), "<|separator|>\n\n");
        else if (t.role == "user") put(out, "Human: ", trim(t.content), "<|separator|>\n\n");
        else if (t.role == "assistant") put(out, "Assistant: ", t.content, "<|separator|>\n\n");
    }
    if (add_ass) out += "Assistant:";
}

// openPangu Embedded: "[unused9]<speaker>：text[unused10]"; without a leading system turn an empty one.
void pangu_embedded(const Turns& chat, bool add_ass, std::string& out) {
    for (size_t i = 0; i < chat.size(); i++) {
        const Turn& t = chat[i];
        if (i == 0 && t.role != "system") out += "[unused9]系统：[unused10]";
        const char* speaker = t.role == "system"      ? "系统："
                              : t.role == "user"      ? "用户："
                              : t.role == "assistant" ? "助手："
                              : t.role == "tool"      ? "工具："
                              : t.role == "function"  ? "方法："
                                                      : nullptr;
        if (speaker) put(out, "[unused9]", speaker, t.content, "[unused10]");
    }
    if (add_ass) out += "[unused9]助手：";
}

constexpr Format kFormats[] = {
    {"gemma", gemma},
    {"orion", orion},
    {"openchat", openchat},
    {"vicuna", [](const Turns& c, bool a, std::string& o) { vicuna(c, a, o, false); }},
    {"vicuna-orca", [](const Turns& c, bool a, std::string& o) { vicuna(c, a, o, true); }},
    {"deepseek", deepseek},
    {"deepseek2", deepseek2},
    {"deepseek3", deepseek3},
    {"deepseek-ocr", deepseek_ocr},
    {"minicpm", minicpm},
    {"rwkv-world", rwkv_world},
    {"gigachat", gigachat},
    {"yandex", yandex},
    {"smolvlm", smolvlm},
    {"hunyuan-moe", hunyuan_moe},
    {"hunyuan-dense", hunyuan_dense},
    {"hunyuan-vl", hunyuan_vl},
    {"grok-2", grok2},
    {"pangu-embedded", pangu_embedded},
};

}  // namespace

std::span<const Format> prose_formats() { return kFormats; }

}  // namespace bee::chat::builtin
