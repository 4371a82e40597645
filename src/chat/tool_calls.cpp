// chat/tool_calls: format detection and the incremental tool-call parser (see the header).
#include "chat/tool_calls.h"

#include <nlohmann/json.hpp>

namespace bee::chat {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralOpen = "[TOOL_CALLS]", kMistralArgs = "[ARGS]", kMistralId = "[CALL_ID]";

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

size_t skip_ws(std::string_view s, size_t p) {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r' || s[p] == '\n')) p++;
    return p;
}

// End (one past the closing bracket) of the JSON object or array starting at s[p], found by bracket
// depth outside strings; npos if the text ends first. Validity is left to the JSON parser.
size_t json_extent(std::string_view s, size_t p) {
    int depth = 0;
    bool in_str = false;
    for (size_t i = p; i < s.size(); i++) {
        const char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
        }
    }
    return std::string_view::npos;
}

// Parses the JSON object/array at s[*p] and moves *p past it; false (p unchanged) if there is none.
bool take_json(std::string_view s, size_t* p, Json* out) {
    if (*p >= s.size() || (s[*p] != '{' && s[*p] != '[')) return false;
    const size_t end = json_extent(s, *p);
    if (end == std::string_view::npos) return false;
    Json j = Json::parse(s.substr(*p, end - *p), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return false;
    *out = std::move(j);
    *p = end;
    return true;
}

// One call from {"name", "arguments"|"parameters", "id"?} or OpenAI's {"type":"function","function":{…}}.
// Arguments given as a string are taken as the model wrote them (it is already serialized JSON).
bool call_from_json(const Json& j, ToolCall* c) {
    if (!j.is_object()) return false;
    if (j.contains("function") && j["function"].is_object()) {
        if (!call_from_json(j["function"], c)) return false;
        if (j.contains("id") && j["id"].is_string()) c->id = j["id"].get<std::string>();
        return true;
    }
    auto name = j.find("name");
    if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return false;
    auto args = j.find("arguments");
    if (args == j.end()) args = j.find("parameters");
    ToolCall out;
    out.name = name->get<std::string>();
    if (args == j.end() || args->is_null()) out.arguments = "{}";
    else if (args->is_string()) out.arguments = args->get<std::string>();
    else if (args->is_object()) out.arguments = args->dump();
    else return false;
    if (j.contains("id") && j["id"].is_string()) out.id = j["id"].get<std::string>();
    *c = std::move(out);
    return true;
}

// A call, an array of calls, or a wrapper {"tool_calls": [...]} / {"tool_call": {...}}. All or nothing.
bool calls_from_value(const Json& j, std::vector<ToolCall>* out) {
    std::vector<ToolCall> calls;
    if (j.is_object() && j.contains("tool_calls")) return calls_from_value(j["tool_calls"], out);
    if (j.is_object() && j.contains("tool_call")) return calls_from_value(j["tool_call"], out);
    if (j.is_array()) {
        if (j.empty()) return false;
        for (const Json& e : j) {
            ToolCall c;
            if (!call_from_json(e, &c)) return false;
            calls.push_back(std::move(c));
        }
    } else {
        ToolCall c;
        if (!call_from_json(j, &c)) return false;
        calls.push_back(std::move(c));
    }
    for (ToolCall& c : calls) out->push_back(std::move(c));
    return true;
}

bool starts_with_at(std::string_view s, size_t p, std::string_view prefix) {
    return s.size() - p >= prefix.size() && s.compare(p, prefix.size(), prefix) == 0;
}

// Mistral: [TOOL_CALLS][{json}, ...] (Nemo, Small ≤ 3.1), or one or more
// [TOOL_CALLS]name[CALL_ID]id?[ARGS]{json} segments (Small 3.2, Devstral). The opener may be missing
// (the detokenizer drops control tokens), leaving the bare array.
bool parse_mistral(std::string_view s, size_t* p, std::vector<ToolCall>* calls) {
    size_t n = 0;
    for (;;) {
        size_t q = skip_ws(s, *p);
        const bool opener = starts_with_at(s, q, kMistralOpen);
        if (opener) q = skip_ws(s, q + kMistralOpen.size());
        else if (n > 0) break;
        Json j;
        if (q < s.size() && s[q] == '[') {
            if (!take_json(s, &q, &j) || !calls_from_value(j, calls)) return false;
        } else {
            const size_t args = s.find(kMistralArgs, q);
            if (!opener || args == std::string_view::npos) return false;
            std::string_view head = s.substr(q, args - q);  // name, or name[CALL_ID]id
            ToolCall c;
            const size_t idp = head.find(kMistralId);
            c.name = std::string(head.substr(0, idp));
            if (idp != std::string_view::npos) c.id = std::string(head.substr(idp + kMistralId.size()));
            q = args + kMistralArgs.size();
            if (c.name.empty() || c.name.find_first_of(" \t\r\n{}[]\"") != std::string::npos) return false;
            if (!take_json(s, &q, &j) || !j.is_object()) return false;
            c.arguments = j.dump();
            calls->push_back(std::move(c));
        }
        *p = q;
        n++;
    }
    return n > 0;
}

// JSON values naming calls, separated by blanks or ';' (how models write several bare calls).
bool parse_json_calls(std::string_view s, size_t* p, std::vector<ToolCall>* calls) {
    size_t n = 0;
    Json j;
    for (size_t q = *p; take_json(s, &q, &j); *p = q) {
        if (!calls_from_value(j, calls)) break;  // JSON that is not a call: it and what follows are text
        n++;
        q = skip_ws(s, q);
        if (q < s.size() && s[q] == ';') q = skip_ws(s, q + 1);
    }
    return n > 0;
}

// Llama 3.x: [<|python_tag|>] then JSON calls.
bool parse_llama3(std::string_view s, size_t* p, std::vector<ToolCall>* calls) {
    *p = skip_ws(s, *p);
    if (starts_with_at(s, *p, kPythonTag)) *p = skip_ws(s, *p + kPythonTag.size());
    return parse_json_calls(s, p, calls);
}

// Generic: the reply is JSON naming the call(s) — a call, an array, {"tool_calls": [...]}, or several
// of these — possibly inside a ``` / ```json fence.
bool parse_generic(std::string_view s, size_t* p, std::vector<ToolCall>* calls) {
    size_t q = skip_ws(s, *p);
    const bool fenced = starts_with_at(s, q, "```");
    if (fenced) {
        q += 3;
        if (starts_with_at(s, q, "json")) q += 4;
        q = skip_ws(s, q);
    }
    if (!parse_json_calls(s, &q, calls)) return false;
    if (fenced) {
        if (!starts_with_at(s, q, "```")) return false;
        q += 3;
    }
    *p = q;
    return true;
}

}  // namespace

ToolCallFormat detect_tool_call_format(std::string_view src) {
    if (src.find(kMistralOpen) != std::string_view::npos) return ToolCallFormat::mistral;
    if (src.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::hermes;
    // Llama 3.x templates hand tool results back in an "ipython" turn and teach bare JSON calls.
    if (src.find("<|start_header_id|>") != std::string_view::npos &&
        (src.find("ipython") != std::string_view::npos || src.find(kPythonTag) != std::string_view::npos))
        return ToolCallFormat::llama3;
    return ToolCallFormat::generic;
}

ToolCallSyntax tool_call_syntax(ToolCallFormat f, std::string_view template_source) {
    if (f == ToolCallFormat::mistral && template_source.find(kMistralArgs) != std::string_view::npos)
        return {"", "", std::string(kMistralOpen), "", "", "arguments", std::string(kMistralArgs)};
    switch (f) {
        case ToolCallFormat::hermes:
            return {"", "", std::string(kHermesOpen) + "\n", "\n" + std::string(kHermesClose), "\n", "arguments", ""};
        case ToolCallFormat::llama3: return {"", "", "", "", "", "parameters", ""};
        case ToolCallFormat::mistral:
            return {"[", "]", "", "", ", ", "arguments", ""};  // [TOOL_CALLS] is a control token
        default: return {"", "", "", "", "", "arguments", ""};
    }
}

std::vector<std::string> tool_call_markers(ToolCallFormat f) {
    switch (f) {
        case ToolCallFormat::hermes: return {std::string(kHermesOpen), std::string(kHermesClose)};
        case ToolCallFormat::llama3: return {std::string(kPythonTag)};
        case ToolCallFormat::mistral:
            return {std::string(kMistralOpen), std::string(kMistralArgs), std::string(kMistralId)};
        default: return {};
    }
}

const char* tool_call_format_name(ToolCallFormat f) {
    switch (f) {
        case ToolCallFormat::hermes: return "hermes";
        case ToolCallFormat::llama3: return "llama3";
        case ToolCallFormat::mistral: return "mistral";
        default: return "generic";
    }
}

void ToolCallParser::release(ToolCallDelta& d, size_t n) {
    if (n == 0) return;
    std::string_view out(held_.data(), n);
    if (!is_blank(out)) released_any_ = true;
    d.content.append(out);
    held_.erase(0, n);
}

void ToolCallParser::take_calls(ToolCallDelta& d, std::vector<ToolCall>& calls) {
    n_calls_ += calls.size();
    for (ToolCall& c : calls) d.calls.push_back(std::move(c));
}

// The marker that opens a call in this format (empty: generic has none).
std::string_view ToolCallParser::opener() const {
    switch (fmt_) {
        case ToolCallFormat::hermes: return kHermesOpen;
        case ToolCallFormat::llama3: return kPythonTag;
        case ToolCallFormat::mistral: return kMistralOpen;
        default: return {};
    }
}

// Bare-JSON formats: the reply so far is blank, then starts like a call ('{', Mistral '[', a fence).
bool ToolCallParser::anchored_start() const {
    if (released_any_ || fmt_ == ToolCallFormat::hermes) return false;
    const size_t p = skip_ws(held_, 0);
    if (p >= held_.size()) return false;
    const char c = held_[p];
    if (fmt_ == ToolCallFormat::llama3) return c == '{';
    if (fmt_ == ToolCallFormat::mistral) return c == '[';
    return c == '{' || c == '[' || c == '`';
}

void ToolCallParser::parse_held(ToolCallDelta& d, bool at_end) {
    for (;;) {
        if (!in_call_) {
            // A reply that starts like a bare call is held whole (checked first, so the result does not
            // depend on how the text was split).
            if (anchored_start()) {
                in_call_ = true;
                continue;
            }
            const std::string_view op = opener();
            const size_t at = op.empty() ? std::string::npos : held_.find(op);
            if (at != std::string::npos) {
                const size_t text_end = held_.find_last_not_of(" \t\r\n", at == 0 ? 0 : at - 1);
                const size_t n_text = at == 0 || text_end == std::string::npos ? 0 : text_end + 1;
                release(d, n_text);
                held_.erase(0, at - n_text);  // blanks before a call are dropped
                in_call_ = true;
                continue;
            }
            if (at_end) {
                if (!(is_blank(held_) && n_calls_ > 0)) release(d, held_.size());  // blanks after calls: dropped
                held_.clear();
                return;
            }
            // Hold back trailing blanks (they may separate calls), a tail that may grow into an opener,
            // and, for bare-JSON formats, a reply that has been blank so far.
            if (!released_any_ && fmt_ != ToolCallFormat::hermes && is_blank(held_)) return;
            size_t keep = held_.size() - (held_.find_last_not_of(" \t\r\n") + 1);
            if (!op.empty()) {
                for (size_t n = std::min(held_.size(), op.size() - 1); n > keep; n--)
                    if (held_.compare(held_.size() - n, n, op, 0, n) == 0) {
                        keep = n;
                        break;
                    }
                if (keep > 0 && keep < held_.size()) {  // and the blanks before that tail
                    const size_t text_end = held_.find_last_not_of(" \t\r\n", held_.size() - keep - 1);
                    keep = held_.size() - (text_end == std::string::npos ? 0 : text_end + 1);
                }
            }
            release(d, held_.size() - keep);
            return;
        }
        // held_ starts with a call (or what may be one).
        if (fmt_ == ToolCallFormat::hermes) {
            const size_t close = held_.find(kHermesClose);
            if (close == std::string::npos && !at_end) return;
            const size_t body0 = kHermesOpen.size();
            const size_t end = close == std::string::npos ? held_.size() : close + kHermesClose.size();
            const std::string_view body =
                std::string_view(held_).substr(body0, (close == std::string::npos ? held_.size() : close) - body0);
            size_t p = skip_ws(body, 0);
            Json j;
            std::vector<ToolCall> calls;
            if (take_json(body, &p, &j) && is_blank(body.substr(p)) && calls_from_value(j, &calls)) {
                take_calls(d, calls);
                held_.erase(0, end);
            } else {
                release(d, end);  // not a valid call: the text stays content
            }
            in_call_ = false;
            continue;
        }
        if (!at_end) return;  // bare-JSON and Mistral calls have no closing marker: parse at the end
        size_t p = 0;
        std::vector<ToolCall> calls;
        const bool ok = fmt_ == ToolCallFormat::llama3    ? parse_llama3(held_, &p, &calls)
                        : fmt_ == ToolCallFormat::mistral ? parse_mistral(held_, &p, &calls)
                                                          : parse_generic(held_, &p, &calls);
        if (ok) {
            take_calls(d, calls);
            held_.erase(0, p);
        } else {
            release(d, held_.size());
        }
        in_call_ = false;
        // Text after the calls (rare) is content; looping once more releases it.
        if (held_.empty()) return;
        released_any_ = true;
    }
}

ToolCallDelta ToolCallParser::feed(std::string_view text) {
    ToolCallDelta d;
    held_.append(text);
    parse_held(d, false);
    return d;
}

ToolCallDelta ToolCallParser::finish() {
    ToolCallDelta d;
    parse_held(d, true);
    return d;
}

ToolCallDelta parse_tool_calls(ToolCallFormat f, std::string_view text) {
    ToolCallParser p(f);
    ToolCallDelta a = p.feed(text), b = p.finish();
    a.content += b.content;
    for (ToolCall& c : b.calls) a.calls.push_back(std::move(c));
    return a;
}

}  // namespace bee::chat
