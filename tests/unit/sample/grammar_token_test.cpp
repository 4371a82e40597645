// tests/unit/sample/grammar_token_test: `<[id]>` terminals — a whole (control) token by id, as a forced
// Mistral call `[TOOL_CALLS]name[ARGS]{...}` needs — and that no other control token, and no text, can
// take their place.
#include <gtest/gtest.h>

#include "base/error.h"
#include "sample/grammar.h"
#include "sample/sampler.h"

namespace bee {
namespace {

// ids: 0 "get", 1 "{}", 2 [TOOL_CALLS] (control: no text), 3 [ARGS] (control), 4 another control token,
// 5 end of generation, 6 the text "[TOOL_CALLS]" spelled out, 7 "é" split: 8 its first byte only.
std::shared_ptr<const GrammarVocab> mistral_vocab() {
    auto v = std::make_shared<GrammarVocab>();
    v->text = {"get", "{}", "", "", "", "", "[TOOL_CALLS]", "\xc3\xa9", "\xc3"};
    v->is_eog = {0, 0, 0, 0, 0, 1, 0, 0, 0};
    return v;
}

TEST(GrammarToken, ForcedControlTokensInOrder) {
    GrammarConstraint c(Grammar::parse("root ::= <[2]> \"get\" <[3]> \"{}\""), mistral_vocab());
    for (int32_t id : {0, 1, 3, 4, 5, 6}) EXPECT_FALSE(c.allowed(id)) << id;  // text spelling [TOOL_CALLS]: no
    EXPECT_TRUE(c.allowed(2));
    ASSERT_TRUE(c.accept(2));
    EXPECT_FALSE(c.allowed(2));
    EXPECT_FALSE(c.allowed(3));
    ASSERT_TRUE(c.accept(0));
    EXPECT_TRUE(c.allowed(3));
    EXPECT_FALSE(c.allowed(4));  // a control token the grammar does not name is never allowed
    ASSERT_TRUE(c.accept(3));
    ASSERT_TRUE(c.accept(1));
    EXPECT_TRUE(c.can_end());
    EXPECT_TRUE(c.allowed(5));
}

TEST(GrammarToken, NegatedClassesAndDotNeverMatchATokenTerminal) {
    // `.`, [^x] and a token alternative side by side: the token is allowed only where it is written.
    GrammarConstraint c(Grammar::parse("root ::= ( . | [^x] )* ( <[3]> \"{}\" )?"), mistral_vocab());
    EXPECT_FALSE(c.allowed(2));  // not named at all
    EXPECT_TRUE(c.allowed(3));
    EXPECT_TRUE(c.allowed(6));  // text is text
    ASSERT_TRUE(c.accept(8));   // half a character: no whole token may come now
    EXPECT_FALSE(c.allowed(3));
    GrammarMatcher m(Grammar::parse("root ::= [^a] <[3]>"));
    EXPECT_FALSE(m.accept_token(3));  // [^a] must take a character first
    EXPECT_TRUE(m.accept("b"));
    EXPECT_FALSE(m.accept_token(2));  // an id the grammar never names
    EXPECT_TRUE(m.accept_token(3));
    EXPECT_TRUE(m.can_end());
}

TEST(GrammarToken, ByteTokensCannotSpellATokenTerminal) {
    // A whole-token terminal is a code point past U+10FFFF. A lone 4-byte lead (0xF4 covers U+100000 and
    // up) must not pass as the start of it: generated text never decodes there.
    GrammarMatcher m(Grammar::parse("root ::= <[49152]> \"a\""));
    for (const char* lead : {"\xf4", "\xf4\x8f", "\xf4\x90", "\xf5", "\xf0\x90"}) EXPECT_FALSE(m.allows(lead)) << lead;
    EXPECT_TRUE(m.accept_token(49152));
    EXPECT_TRUE(m.accept("a"));
    // Text up to U+10FFFF still works byte by byte.
    GrammarMatcher top(Grammar::parse("root ::= [\\U0010FFFF]"));
    EXPECT_TRUE(top.accept("\xf4\x8f"));
    EXPECT_TRUE(top.accept("\xbf\xbf"));
    EXPECT_TRUE(top.can_end());
}

TEST(GrammarToken, ParseErrorsAndTokenList) {
    EXPECT_EQ(Grammar::parse("root ::= <[7]> | <[3]> <[7]>")->tokens, (std::vector<int32_t>{3, 7}));
    for (const char* bad : {"root ::= <7>", "root ::= <[]>", "root ::= <[12", "root ::= <[99999999]>"}) {
        try {
            Grammar::parse(bad);
            ADD_FAILURE() << bad;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("grammar: line 1, column 10"), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace bee
