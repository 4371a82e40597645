// tests/unit/server/test_text_output: stop strings found across piece boundaries and held back while
// partial; reasoning split after stop strings.
#include <gtest/gtest.h>

#include "runtime/text_output.h"

using bee::runtime::StopMatcher;
using bee::runtime::TextDelta;
using bee::runtime::TextOutput;

namespace {

// Feeds pieces one by one; returns everything released and the stop string hit ("" if none).
std::pair<std::string, std::string> feed_all(StopMatcher& m, const std::vector<std::string>& pieces) {
    std::string out, hit;
    for (const std::string& p : pieces) {
        out += m.feed(p, &hit);
        if (!hit.empty()) return {out, hit};
    }
    return {out + m.flush(), hit};
}

}  // namespace

TEST(StopMatcher, NoStopsPassesEverythingAtOnce) {
    StopMatcher m({});
    std::string hit;
    EXPECT_EQ(m.feed("Hello", &hit), "Hello");
    EXPECT_EQ(m.feed(" world", &hit), " world");
    EXPECT_EQ(hit, "");
}

TEST(StopMatcher, StopSplitAcrossPiecesIsCaughtAndCut) {
    StopMatcher m({"STOP"});
    std::string hit;
    EXPECT_EQ(m.feed("abc S", &hit), "abc ");  // "S" could start "STOP": held back
    EXPECT_EQ(m.feed("TO", &hit), "");
    EXPECT_EQ(m.feed("P tail", &hit), "");
    EXPECT_EQ(hit, "STOP");
}

TEST(StopMatcher, PartialMatchThatFailsIsReleased) {
    StopMatcher m({"STOP"});
    auto [out, hit] = feed_all(m, {"a ST", "ART b"});
    EXPECT_EQ(out, "a START b");
    EXPECT_EQ(hit, "");
}

TEST(StopMatcher, EarliestStopWinsAndLongerOnTies) {
    StopMatcher m({"\n", "\n\n", "end"});
    auto [out, hit] = feed_all(m, {"one\n\ntwo end"});
    EXPECT_EQ(out, "one");
    EXPECT_EQ(hit, "\n\n");
    StopMatcher m2({"end", "two"});
    auto [out2, hit2] = feed_all(m2, {"one two end"});
    EXPECT_EQ(out2, "one ");
    EXPECT_EQ(hit2, "two");
}

TEST(StopMatcher, HeldTailReleasedAtFlush) {
    StopMatcher m({"</s>"});
    std::string hit;
    EXPECT_EQ(m.feed("text </", &hit), "text ");
    EXPECT_EQ(m.flush(), "</");
}

TEST(TextOutput, ReasoningSplitAfterStopStrings) {
    TextOutput t({"DONE"}, true, "<think>", "</think>", true);
    std::string hit;
    TextDelta a = t.feed("plan a b", &hit);
    EXPECT_TRUE(t.in_reasoning());
    TextDelta b = t.feed("</thi", &hit);
    TextDelta c = t.feed("nk>answer DO", &hit);
    TextDelta d = t.feed("NE ignored", &hit);
    EXPECT_EQ(hit, "DONE");
    EXPECT_EQ(a.reasoning + b.reasoning + c.reasoning + d.reasoning, "plan a b");
    EXPECT_EQ(a.content + b.content + c.content + d.content, "answer ");
    EXPECT_FALSE(t.in_reasoning());
}

TEST(TextOutput, WithoutReasoningTagsStayInContent) {
    TextOutput t({}, false, "<think>", "</think>", false);
    std::string hit;
    TextDelta a = t.feed("<think>x</think>y", &hit);
    EXPECT_EQ(a.content, "<think>x</think>y");
    EXPECT_EQ(a.reasoning, "");
}
