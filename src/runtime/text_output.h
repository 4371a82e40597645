// runtime/text_output: turns a slot's detokenized pieces into what the client sees — stop strings
// found and cut (a partial match at the end is held back until resolved), then the reasoning span
// split off into reasoning_content when the request asks for it.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/reasoning.h"

namespace bee::runtime {

class StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stops);
    // Appends text and returns what can be released now. If a stop string appears, `*hit` is set to it,
    // the text before it is released, and everything from the stop string on is dropped.
    std::string feed(std::string_view text, std::string* hit);
    // End of generation: releases the held-back tail.
    std::string flush();

private:
    std::vector<std::string> stops_;
    std::string held_;
};

struct TextDelta {
    std::string content, reasoning;
};

// Stop strings, then (optionally) reasoning extraction.
class TextOutput {
public:
    // reasoning: split <think> spans off; open/close are the tags, starts_inside if the prompt opened one.
    TextOutput(std::vector<std::string> stops, bool reasoning, std::string open, std::string close, bool starts_inside);
    // Feeds a decoded piece; sets *hit when a stop string ended the text.
    TextDelta feed(std::string_view piece, std::string* hit);
    TextDelta flush();
    // True while the text released so far is inside an unfinished reasoning span.
    bool in_reasoning() const { return parser_ && parser_->inside(); }

private:
    TextDelta split(std::string_view text);
    StopMatcher stop_;
    std::unique_ptr<chat::ReasoningParser> parser_;
};

}  // namespace bee::runtime
