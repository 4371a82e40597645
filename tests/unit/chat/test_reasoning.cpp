// tests/unit/chat/test_reasoning: <think> splitting, fed whole and one byte at a time (streaming).
#include <gtest/gtest.h>

#include "chat/reasoning.h"

namespace {

using bee::chat::ReasoningDelta;
using bee::chat::ReasoningParser;

ReasoningDelta run(ReasoningParser p, const std::string& text, size_t piece) {
    ReasoningDelta all;
    for (size_t k = 0; k < text.size(); k += piece) {
        ReasoningDelta d = p.feed(text.substr(k, piece));
        all.content += d.content;
        all.reasoning += d.reasoning;
    }
    ReasoningDelta d = p.flush();
    all.content += d.content;
    all.reasoning += d.reasoning;
    return all;
}

TEST(Reasoning, SplitsThinkSpanWhateverThePieceSize) {
    const std::string text = "<think>Let me think: a<b.</think>The answer is 4.";
    for (size_t piece : {1, 2, 3, 5, 7, 100}) {
        ReasoningDelta d = run(ReasoningParser(), text, piece);
        EXPECT_EQ(d.reasoning, "Let me think: a<b.") << piece;
        EXPECT_EQ(d.content, "The answer is 4.") << piece;
    }
}

TEST(Reasoning, StartsInsideWhenThePromptOpenedTheSpan) {
    ReasoningDelta d = run(ReasoningParser("<think>", "</think>", true), "hmm</think>\n\nHi", 1);
    EXPECT_EQ(d.reasoning, "hmm");
    EXPECT_EQ(d.content, "\n\nHi");
}

TEST(Reasoning, PartialTagIsHeldBackThenReleased) {
    ReasoningParser p;
    ReasoningDelta d = p.feed("Hello <thi");
    EXPECT_EQ(d.content, "Hello ");
    d = p.feed("s is not a tag");
    EXPECT_EQ(d.content, "<this is not a tag");
    d = p.feed("x <th");
    EXPECT_EQ(d.content, "x ");
    d = p.flush();  // end of generation: the held "<th" is content
    EXPECT_EQ(d.content, "<th");
    EXPECT_FALSE(p.inside());
}

TEST(Reasoning, UnclosedReasoningStaysReasoning) {
    ReasoningDelta d = run(ReasoningParser(), "<think>still thinking <", 4);
    EXPECT_EQ(d.reasoning, "still thinking <");
    EXPECT_EQ(d.content, "");
}

TEST(Reasoning, NoTagsMeansAllContent) {
    ReasoningDelta d = run(ReasoningParser(), "plain answer, no tags", 3);
    EXPECT_EQ(d.content, "plain answer, no tags");
    EXPECT_EQ(d.reasoning, "");
}

}  // namespace
