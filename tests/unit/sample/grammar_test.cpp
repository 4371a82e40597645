// tests/unit/sample/grammar_test: GBNF parse errors, the matcher on whole and split texts, and
// grammar-constrained sampling over a toy vocabulary.
#include "sample/grammar.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"

namespace bee {
namespace {

// Whether the whole of `text` is a sentence of `gbnf` (fed in one piece).
bool full_match(const std::string& gbnf, const std::string& text) {
    GrammarMatcher m(Grammar::parse(gbnf));
    return m.accept(text) && m.can_end();
}

std::string parse_error(const std::string& gbnf) {
    try {
        Grammar::parse(gbnf);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Grammar, LiteralsAlternativesAndSequences) {
    const std::string g = "root ::= \"yes\" | \"no\" | \"may\" \"be\"\n";
    EXPECT_TRUE(full_match(g, "yes"));
    EXPECT_TRUE(full_match(g, "maybe"));
    EXPECT_FALSE(full_match(g, "ye"));  // a prefix is accepted but cannot end
    EXPECT_FALSE(full_match(g, "yess"));
    GrammarMatcher m(Grammar::parse(g));
    EXPECT_TRUE(m.allows("y"));
    EXPECT_FALSE(m.allows("x"));
    EXPECT_FALSE(m.can_end());
}

TEST(Grammar, ClassesRangesNegationAndAny) {
    EXPECT_TRUE(full_match("root ::= [a-c0-9]+", "ab09c"));
    EXPECT_FALSE(full_match("root ::= [a-c0-9]+", "abd"));
    EXPECT_FALSE(full_match("root ::= [a-c0-9]+", ""));
    EXPECT_TRUE(full_match("root ::= [^\"\\n]*", "any thing é"));
    EXPECT_FALSE(full_match("root ::= [^\"\\n]*", "no\"quote"));
    EXPECT_TRUE(full_match("root ::= . . .", "a€b"));  // one code point each, whatever its UTF-8 length
    EXPECT_FALSE(full_match("root ::= . .", "abc"));
}

TEST(Grammar, RepetitionOperators) {
    EXPECT_TRUE(full_match("root ::= \"a\"? \"b\"", "b"));
    EXPECT_TRUE(full_match("root ::= \"a\"? \"b\"", "ab"));
    EXPECT_FALSE(full_match("root ::= \"a\"? \"b\"", "aab"));
    EXPECT_TRUE(full_match("root ::= \"ab\"*", ""));
    EXPECT_TRUE(full_match("root ::= \"ab\"*", "ababab"));
    EXPECT_FALSE(full_match("root ::= \"ab\"*", "aba"));
    const std::string g = "root ::= [0-9]{2,4}";
    EXPECT_FALSE(full_match(g, "1"));
    EXPECT_TRUE(full_match(g, "12"));
    EXPECT_TRUE(full_match(g, "1234"));
    EXPECT_FALSE(full_match(g, "12345"));
    EXPECT_TRUE(full_match("root ::= \"x\"{3}", "xxx"));
    EXPECT_FALSE(full_match("root ::= \"x\"{3}", "xx"));
    EXPECT_TRUE(full_match("root ::= \"x\"{2,}", "xxxxxxx"));
    EXPECT_FALSE(full_match("root ::= \"x\"{2,}", "x"));
}

TEST(Grammar, RulesGroupsCommentsAndEscapes) {
    const std::string g =
        "# a list of words\n"
        "root ::= word (\", \" word)*  # trailing comment\n"
        "word ::= [a-z]+\n"
        "  | \"\\\"\" [a-z]* \"\\\"\"\n"  // continuation line starting with '|'
        "nl ::= \"\\n\\t\\x41\\u00e9\"\n";
    EXPECT_TRUE(full_match(g, "ab, \"q\", c"));
    EXPECT_FALSE(full_match(g, "ab,c"));
    EXPECT_TRUE(full_match("root ::= \"\\x41\\u00e9\\U0001F600\"", "Aé😀"));
    EXPECT_TRUE(full_match("root ::= (\"a\" | \"b\"\n  | \"c\")+", "abcab"));
}

TEST(Grammar, RecursionIsFollowed) {
    const std::string g = "root ::= \"(\" root \")\" | \"\"\n";
    EXPECT_TRUE(full_match(g, "((()))"));
    EXPECT_FALSE(full_match(g, "(()"));
    EXPECT_FALSE(full_match(g, "())"));
}

TEST(Grammar, TokensSplitInsideCharacters) {
    GrammarMatcher m(Grammar::parse("root ::= \"é\" [a-z]"));
    const std::string e = "é";  // 2 bytes: a byte-fallback tokenizer may produce them one by one
    EXPECT_TRUE(m.accept(e.substr(0, 1)));
    EXPECT_FALSE(m.can_end());
    EXPECT_FALSE(m.allows("\xa8"));  // a continuation byte that makes 'è', not 'é'
    EXPECT_TRUE(m.accept(e.substr(1, 1)));
    EXPECT_FALSE(m.accept("\xff"));  // never valid UTF-8
    EXPECT_TRUE(m.accept("z"));
    EXPECT_TRUE(m.can_end());
    GrammarMatcher ascii(Grammar::parse("root ::= [a-z]+"));
    EXPECT_FALSE(ascii.allows("\xc3"));  // no lowercase ASCII letter starts with this byte
    // Overlong forms of ASCII (0xC1 0xB2 would decode to 'r') are not UTF-8: neither whole nor begun.
    EXPECT_FALSE(ascii.allows("\xc1\xb2"));
    EXPECT_FALSE(ascii.allows("\xc1"));
    EXPECT_FALSE(ascii.allows("\xe0\x81"));
    GrammarMatcher any(Grammar::parse("root ::= .+"));
    EXPECT_FALSE(any.allows("\xed\xa0\x80"));  // a UTF-16 surrogate
}

TEST(Grammar, RejectedTextLeavesStateUnchanged) {
    GrammarMatcher m(Grammar::parse("root ::= \"abc\""));
    EXPECT_TRUE(m.accept("a"));
    EXPECT_FALSE(m.accept("bx"));
    EXPECT_TRUE(m.accept("bc"));
    EXPECT_TRUE(m.can_end());
}

TEST(Grammar, ParseErrorsSayWhereWhatAndHow) {
    EXPECT_NE(parse_error("root ::= \"abc").find("line 1, column 10: unterminated string literal"), std::string::npos);
    EXPECT_NE(parse_error("root ::= [a-z").find("unterminated character class"), std::string::npos);
    EXPECT_NE(parse_error("root ::= [z-a]").find("reversed"), std::string::npos);
    EXPECT_NE(parse_error("root ::= x\n").find("line 1, column 10: undefined rule 'x'"), std::string::npos);
    EXPECT_NE(parse_error("start ::= \"a\"").find("no 'root' rule"), std::string::npos);
    EXPECT_NE(parse_error("root ::= (\"a\"").find("unclosed '('"), std::string::npos);
    EXPECT_NE(parse_error("root ::= * \"a\"").find("nothing to repeat"), std::string::npos);
    EXPECT_NE(parse_error("root ::= \"a\"{3,1}").find("n < m"), std::string::npos);
    EXPECT_NE(parse_error("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
    EXPECT_NE(parse_error("root \"a\"").find("expected '::='"), std::string::npos);
    EXPECT_NE(parse_error("root ::= \"a\"\nroot ::= \"b\"").find("line 2, column 1: rule 'root' is defined twice"),
              std::string::npos);
    EXPECT_NE(parse_error("root ::= root \"a\" | \"b\"").find("left-recursive"), std::string::npos);
    EXPECT_NE(parse_error("root ::= e root\ne ::= \"\"").find("left-recursive"), std::string::npos);
    EXPECT_NE(parse_error("").find("empty grammar"), std::string::npos);
    EXPECT_NE(parse_error("root ::= \"a\" )").find("unexpected ')'"), std::string::npos);
}

// A toy vocabulary: texts, one end-of-generation token (id 5).
std::shared_ptr<const GrammarVocab> toy_vocab() {
    auto v = std::make_shared<GrammarVocab>();
    v->text = {"a", "b", "ab", "x", "", "", "ba"};
    v->is_eog = {0, 0, 0, 0, 0, 1, 0};
    return v;
}

TEST(GrammarConstraint, GreedyTakesTheBestAllowedToken) {
    SamplingParams p;
    p.temp = 0;
    Sampler s(p, 7);
    GrammarConstraint c(Grammar::parse("root ::= \"ab\" \"b\"*"), toy_vocab());
    std::vector<float> logits = {1, 2, 0, 9, 0, 8, 3};  // x best, then EOS, then "ba", b, a
    EXPECT_FALSE(c.allowed(3));
    EXPECT_FALSE(c.allowed(5));                // the grammar cannot end yet
    EXPECT_EQ(c.sample(s, logits.data()), 0);  // "a": the best token that starts "ab"
    ASSERT_TRUE(c.accept(0));
    EXPECT_EQ(c.sample(s, logits.data()), 1);  // "b" ("ba" would need another "a")
    ASSERT_TRUE(c.accept(1));
    EXPECT_TRUE(c.can_end());
    EXPECT_EQ(c.sample(s, logits.data()), 5);  // now the end of generation is allowed and best
    EXPECT_FALSE(c.accept(3));
}

TEST(GrammarConstraint, PenaltiesReorderTheCandidates) {
    SamplingParams p;
    p.temp = 0;
    p.repeat_penalty = 100.0f;  // the whole vocabulary is masked (penalties change the logit order)
    Sampler s(p, 7);
    s.accept(1);  // "b" was generated: its logit 5 becomes 0.05, below "ba"
    GrammarConstraint c(Grammar::parse("root ::= [b] [a]?"), toy_vocab());
    std::vector<float> logits = {9, 5, 0, 8, 0, 0, 1};  // a and x are not allowed first
    EXPECT_EQ(c.sample(s, logits.data()), 6);           // "ba"
}

TEST(GrammarConstraint, SampledTokensAreAlwaysAllowed) {
    SamplingParams p;
    p.temp = 1.0f;
    p.top_k = 2;  // the top 2 are never allowed: the whole vocabulary must be masked
    p.seed = 42;
    Sampler s(p, 7);
    std::vector<float> logits = {0, 0.5f, 0.2f, 9, 0, 8, 0.1f};
    for (int round = 0; round < 50; round++) {
        GrammarConstraint c(Grammar::parse("root ::= [ab]+"), toy_vocab());
        const int32_t id = c.sample(s, logits.data());
        EXPECT_TRUE(id == 0 || id == 1 || id == 2 || id == 6) << id;
        EXPECT_TRUE(c.accept(id));
    }
    p.top_k = 0;  // no top-k: every token is checked (the verdicts are cached per grammar state)
    Sampler all(p, 7);
    GrammarConstraint run(Grammar::parse("root ::= [ab]+"), toy_vocab());
    for (int round = 0; round < 50; round++) {
        const int32_t id = run.sample(all, logits.data());
        // after the first token the grammar may end: the end-of-generation token (5) is allowed too
        EXPECT_TRUE(id == 0 || id == 1 || id == 2 || id == 6 || (id == 5 && round > 0)) << id;
        EXPECT_TRUE(run.accept(id));
    }
    GrammarConstraint dead(Grammar::parse("root ::= \"z\""), toy_vocab());
    EXPECT_EQ(dead.sample(s, logits.data()), -1);  // nothing in the vocabulary fits
}

}  // namespace
}  // namespace bee
