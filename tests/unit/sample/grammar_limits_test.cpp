// tests/unit/sample/grammar_limits_test: hostile GBNF (deep groups, repetition bombs, ambiguous rules,
// long rule chains) is refused with an Error naming the budget, or bounded at generation, never a crash.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "sample/grammar.h"

namespace bee {
namespace {

std::string parse_error(const std::string& gbnf) {
    try {
        Grammar::parse(gbnf);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(GrammarLimits, DeepGroupsAreRefusedAtTheNestingLimit) {
    const size_t n = 100000;  // far past any C++ stack: must fail on the limit, not overflow
    const std::string e = parse_error("root ::= " + std::string(n, '(') + "\"a\"" + std::string(n, ')'));
    EXPECT_NE(e.find("groups nested deeper than 512 (the nesting limit)"), std::string::npos) << e;
    EXPECT_NE(e.find("line 1, column 522"), std::string::npos) << e;  // the group that crosses it
    // Right at the limit, the grammar still parses and matches.
    const std::string ok =
        "root ::= " + std::string(kGrammarMaxNesting, '(') + "\"a\"" + std::string(kGrammarMaxNesting, ')');
    GrammarMatcher m(Grammar::parse(ok));
    EXPECT_TRUE(m.accept("a"));
    EXPECT_TRUE(m.can_end());
}

TEST(GrammarLimits, NestedBoundedRepetitionBombIsRefused) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = parse_error("root ::= (((((\"a\"{0,9}){0,9}){0,9}){0,9}){0,9})");  // 45 bytes
    EXPECT_NE(e.find("live stacks"), std::string::npos) << e;
    EXPECT_NE(e.find("avoid nesting optional repetitions"), std::string::npos) << e;
    EXPECT_LT(seconds_since(t0), 2.0);
    // The same bomb after a prefix parses; at generation the prefix is a dead end (its step would be over
    // the live-stack budget), found at once: the sampler ends the output as for any text the grammar refuses.
    GrammarMatcher m(Grammar::parse("root ::= \"x\" (((((\"a\"{0,9}){0,9}){0,9}){0,9}){0,9})"));
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_FALSE(m.allows("x"));
    EXPECT_FALSE(m.accept("xa"));
    EXPECT_FALSE(m.can_end());
    EXPECT_LT(seconds_since(t1), 2.0);
}

TEST(GrammarLimits, SmallNestedRepetitionsStillMatch) {
    GrammarMatcher m(Grammar::parse("root ::= ((\"a\"{0,3}){0,3}){0,3}"));
    EXPECT_TRUE(m.accept(std::string(27, 'a')));
    EXPECT_TRUE(m.can_end());
    EXPECT_FALSE(m.allows("a"));  // 3 * 3 * 3 at most
}

TEST(GrammarLimits, LongRepeatedLiteralsStayLinear) {
    // Each copy of a repeated literal is one reference to a rule holding it: 1,000 x 1,000 characters
    // parses (it used to be a million elements) and matches.
    const std::string word(1000, 'a');
    auto g = Grammar::parse("root ::= \"" + word + "\"{2,1000}");
    EXPECT_LT(g->elems.size(), 10000u);
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept(word + word));
    EXPECT_TRUE(m.can_end());
    EXPECT_FALSE(m.accept("b"));
}

TEST(GrammarLimits, CompiledSizeBudgetIsNamed) {
    // 600 rules, each with {1000} copies of a class: 600,000 elements, over kGrammarMaxSymbols.
    std::string g = "root ::= r0\n";
    for (int i = 0; i < 600; i++) g += "r" + std::to_string(i) + " ::= [a-z]{1000}\n";
    const std::string e = parse_error(g);
    EXPECT_NE(e.find("more than 524288 elements (the compiled-size budget)"), std::string::npos) << e;
    EXPECT_NE(e.find("use '*' or '+' instead of large {m,n} counts"), std::string::npos) << e;
}

TEST(GrammarLimits, ManyAlternativesAtOnePointAreOverTheStackBudget) {
    std::string g = "root ::= ";
    for (int i = 0; i < 5000; i++) g += (i ? " | \"w" : "\"w") + std::to_string(i) + "\"";
    const std::string e = parse_error(g);
    EXPECT_NE(e.find("parsed 5000 ways at once, above the matcher's budget of 4096 live stacks"), std::string::npos)
        << e;
}

TEST(GrammarLimits, LongLeftEdgeRuleChainsAreBoundedNotRecursed) {
    // r0 starts with r1, which starts with r2, ...: 100,000 rules deep at the left edge. The left-recursion
    // check and the matcher's expansion walk it without recursion; the expansion hits its work budget.
    std::string g = "root ::= r0\n";
    for (int i = 0; i < 100000; i++)
        g += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"x\" | \"y\"\n";
    g += "r100000 ::= \"z\"\n";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = parse_error(g);
    EXPECT_NE(e.find("the matcher's step-work budget"), std::string::npos) << e;
    EXPECT_LT(seconds_since(t0), 5.0);
    // A long left-recursive cycle is found without recursion too.
    std::string cyc = "root ::= c0\n";
    for (int i = 0; i < 100000; i++)
        cyc += "c" + std::to_string(i) + " ::= c" + std::to_string((i + 1) % 100000) + " \"x\"\n";
    EXPECT_NE(parse_error(cyc).find("left-recursive"), std::string::npos);
}

TEST(GrammarLimits, AmbiguousSelfRecursiveRulesStayWithinTheBudgets) {
    // Each 'a' opens two optional x's, so the parses of a run of a's multiply (this hung before the
    // matcher kept distinct states only). Now a long run is followed while its distinct states fit the
    // budgets, and then refused: a dead end, reached in bounded time, with the state left as it was.
    GrammarMatcher m(Grammar::parse("root ::= x\nx ::= \"a\" x? x? | \"b\""));
    const auto t0 = std::chrono::steady_clock::now();
    size_t taken = 0;
    while (taken < 1000 && m.accept("a")) taken++;
    EXPECT_GE(taken, 50u);
    EXPECT_LT(taken, 1000u);
    EXPECT_TRUE(m.can_end());
    EXPECT_FALSE(m.allows("a"));
    EXPECT_LT(seconds_since(t0), 20.0);
    std::printf("ambiguous run followed for %zu characters\n", taken);
}

}  // namespace
}  // namespace bee
