// chat/reasoning: splits generated text into visible content and reasoning (<think>...</think> style
// spans), incrementally, so streamed deltas can carry `reasoning_content` as they arrive.
#pragma once
#include <string>
#include <string_view>

namespace bee::chat {

struct ReasoningDelta {
    std::string content;    // visible text produced by this feed
    std::string reasoning;  // reasoning text produced by this feed
};

class ReasoningParser {
public:
    // starts_inside: the prompt already opened the reasoning span (templates that end with "<think>\n").
    explicit ReasoningParser(std::string open = "<think>", std::string close = "</think>", bool starts_inside = false);

    // Feeds newly generated text. A partial tag at the end is held back until it is resolved.
    ReasoningDelta feed(std::string_view text);
    // End of generation: releases anything held back.
    ReasoningDelta flush();
    bool inside() const { return inside_; }

private:
    std::string open_, close_, held_;
    bool inside_ = false;
};

}  // namespace bee::chat
