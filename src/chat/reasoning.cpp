// chat/reasoning: incremental <think>...</think> splitting. A suffix of the input that could be the
// start of the next tag is held back, so a tag split across two streamed pieces is still recognised.
#include "chat/reasoning.h"

#include <algorithm>

namespace bee::chat {

ReasoningParser::ReasoningParser(std::string open, std::string close, bool starts_inside)
    : open_(std::move(open)), close_(std::move(close)), inside_(starts_inside) {}

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
static size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
    size_t max_len = std::min(text.size(), tag.size() - 1);
    for (size_t len = max_len; len > 0; --len)
        if (text.substr(text.size() - len) == tag.substr(0, len)) return len;
    return 0;
}

ReasoningDelta ReasoningParser::feed(std::string_view text) {
    ReasoningDelta out;
    held_.append(text);
    std::string_view rest(held_);
    while (!rest.empty()) {
        const std::string& tag = inside_ ? close_ : open_;
        std::string& sink = inside_ ? out.reasoning : out.content;
        if (tag.empty()) {  // no tag configured for this direction: everything passes through
            sink.append(rest);
            rest = {};
            break;
        }
        size_t at = rest.find(tag);
        if (at != std::string_view::npos) {
            sink.append(rest.substr(0, at));
            rest.remove_prefix(at + tag.size());
            inside_ = !inside_;
            continue;
        }
        size_t keep = partial_tag_suffix(rest, tag);
        sink.append(rest.substr(0, rest.size() - keep));
        rest.remove_prefix(rest.size() - keep);
        break;
    }
    held_ = std::string(rest);
    return out;
}

ReasoningDelta ReasoningParser::flush() {
    ReasoningDelta out;
    (inside_ ? out.reasoning : out.content) = std::move(held_);
    held_.clear();
    return out;
}

}  // namespace bee::chat
