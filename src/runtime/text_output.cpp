// runtime/text_output: stop-string matching with hold-back, and the reasoning split.
#include "runtime/text_output.h"

#include <algorithm>

namespace bee::runtime {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
    for (std::string& s : stops)
        if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopMatcher::feed(std::string_view text, std::string* hit) {
    held_.append(text);
    // The earliest complete stop string wins (ties: the longer one, so "\n\n" beats "\n").
    size_t best = std::string::npos;
    const std::string* best_stop = nullptr;
    for (const std::string& s : stops_) {
        const size_t at = held_.find(s);
        if (at != std::string::npos && (at < best || (at == best && s.size() > best_stop->size()))) {
            best = at;
            best_stop = &s;
        }
    }
    if (best_stop) {
        *hit = *best_stop;
        std::string out = held_.substr(0, best);
        held_.clear();
        return out;
    }
    // Hold back the longest tail that could still grow into a stop string.
    size_t keep = 0;
    for (const std::string& s : stops_) {
        for (size_t len = std::min(held_.size(), s.size() - 1); len > keep; len--) {
            if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
                keep = len;
                break;
            }
        }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string StopMatcher::flush() {
    std::string out;
    out.swap(held_);
    return out;
}

TextOutput::TextOutput(std::vector<std::string> stops, bool reasoning, std::string open, std::string close,
                       bool starts_inside)
    : stop_(std::move(stops)) {
    if (reasoning) parser_ = std::make_unique<chat::ReasoningParser>(std::move(open), std::move(close), starts_inside);
}

TextDelta TextOutput::split(std::string_view text) {
    TextDelta d;
    if (!parser_) {
        d.content = std::string(text);
        return d;
    }
    chat::ReasoningDelta r = parser_->feed(text);
    d.content = std::move(r.content);
    d.reasoning = std::move(r.reasoning);
    return d;
}

TextDelta TextOutput::feed(std::string_view piece, std::string* hit) { return split(stop_.feed(piece, hit)); }

TextDelta TextOutput::flush() {
    TextDelta d = split(stop_.flush());
    if (parser_) {
        chat::ReasoningDelta r = parser_->flush();
        d.content += r.content;
        d.reasoning += r.reasoning;
    }
    return d;
}

}  // namespace bee::runtime
