// tests/unit/chat/test_template_errors: syntax errors name line:column, render errors are bee::Error,
// hostile templates hit the interpreter's bounds instead of hanging or crashing; chat::apply's context.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/error.h"
#include "chat/template.h"

namespace {

using bee::chat::Json;
using bee::chat::Template;

std::string parse_error(const std::string& src) {
    try {
        Template::parse(src);
    } catch (const bee::Error& e) {
        return e.what();
    }
    return "";
}

std::string render_error(const std::string& src, const Json& ctx = Json::object()) {
    try {
        Template::parse(src).render(ctx, 0);
    } catch (const bee::Error& e) {
        return e.what();
    }
    return "";
}

std::string render(const std::string& src, const Json& ctx = Json::object()) {
    return Template::parse(src).render(ctx, 0);
}

TEST(ChatTemplateErrors, SyntaxErrorsNameLineAndColumn) {
    EXPECT_NE(parse_error("hello\n  {{ 1 + }}").find("chat template: 2:10:"), std::string::npos)
        << parse_error("hello\n  {{ 1 + }}");
    EXPECT_NE(parse_error("{% if x %}never closed").find("endif"), std::string::npos);
    EXPECT_NE(parse_error("a\nb\n{{ x").find("3:1:"), std::string::npos) << parse_error("a\nb\n{{ x");
    EXPECT_NE(parse_error("{% frobnicate %}").find("unknown or unsupported tag 'frobnicate'"), std::string::npos);
    EXPECT_NE(parse_error("{{ 'abc }}").find("unterminated string"), std::string::npos);
    EXPECT_NE(parse_error("{# no end").find("unterminated comment"), std::string::npos);
    EXPECT_NE(parse_error("{{ a ? b }}").find("unexpected character '?'"), std::string::npos);
    EXPECT_NE(parse_error("{% for x in %}{% endfor %}").find("expected an expression"), std::string::npos);
    EXPECT_NE(parse_error("{% endif %}").find("unknown or unsupported tag 'endif'"), std::string::npos);
    EXPECT_NE(parse_error("{{ f(a=1, 2) }}").find("positional argument after a keyword"), std::string::npos);
}

TEST(ChatTemplateErrors, RenderErrorsAreErrors) {
    EXPECT_NE(render_error("{{ x | nosuchfilter }}").find("unknown filter 'nosuchfilter'"), std::string::npos);
    EXPECT_NE(render_error("{{ x is nosuchtest }}").find("unknown test"), std::string::npos);
    EXPECT_NE(render_error("{{ raise_exception('Roles must alternate') }}")
                  .find("raised an error: Roles must alternate"),
              std::string::npos);
    EXPECT_NE(render_error("\n\n  {{ undefined_thing.attr }}").find("line 3:"), std::string::npos)
        << render_error("\n\n  {{ undefined_thing.attr }}");
    EXPECT_NE(render_error("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
    EXPECT_NE(render_error("{{ 'a' + 1 }}").find("unsupported operand"), std::string::npos);
    EXPECT_NE(render_error("{{ nope() }}").find("undefined and cannot be called"), std::string::npos);
    EXPECT_NE(render_error("{% for x in 5 %}{% endfor %}").find("cannot iterate"), std::string::npos);
    EXPECT_NE(render_error("{% set x.y = 1 %}").find("namespace"), std::string::npos);
    EXPECT_NE(render_error("{% break %}").find("outside a for loop"), std::string::npos);
    EXPECT_NE(render_error("{{ 999999999999999999 * 100 }}").find("overflow"), std::string::npos);
    EXPECT_THROW(Template::parse("x").render(Json::array(), 0), bee::Error);
}

TEST(ChatTemplateErrors, HostileTemplatesHitBounds) {
    EXPECT_NE(parse_error("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}")
                  .find("nested too deeply"),
              std::string::npos);
    std::string deep_ifs;
    for (int k = 0; k < 5000; ++k) deep_ifs += "{% if true %}";
    EXPECT_NE(parse_error(deep_ifs).find("nested too deeply"), std::string::npos);
    EXPECT_NE(render_error("{% for i in range(100000000) %}{% endfor %}").find("range() longer"), std::string::npos);
    EXPECT_NE(render_error("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}")
                  .find("steps"),
              std::string::npos);
    EXPECT_NE(render_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("nested deeper"), std::string::npos);
    EXPECT_NE(render_error("{{ 'a' * 1000000000 }}").find("too large"), std::string::npos);
    EXPECT_NE(render_error("{% set s = 'x' * 1000000 %}{% for i in range(1000) %}{{ s }}{% endfor %}")
                  .find("output larger"),
              std::string::npos);
    EXPECT_NE(render_error(
                  "{% set l = [] %}{% for j in range(5) %}{% for i in range(1000000) %}{% set _ = l.append(i) %}"
                  "{% endfor %}{% endfor %}")
                  .find("steps"),
              std::string::npos);
    EXPECT_NE(render_error("{% for i in range(900000) %}{% set x = range(900000) %}{% endfor %}").find("steps"),
              std::string::npos);
    EXPECT_NE(render_error("{% set s = 'x' * 60000000 %}{% for i in range(10) %}{% set t = s ~ i %}{% endfor %}")
                  .find("bytes of strings"),
              std::string::npos);
}

TEST(ChatTemplateErrors, CyclicAndDeepValuesNeitherCrashNorLeak) {
    // A list containing itself: printing or serialising it is refused, and (under ASan/LSan) nothing leaks.
    EXPECT_EQ(render("{% set l = [] %}{{ l.append(l) }}{{ l | length }}"), "None1");
    EXPECT_NE(render_error("{% set l = [] %}{{ l.append(l) }}{{ l }}").find("nested too deeply"), std::string::npos);
    EXPECT_NE(render_error("{% set d = {} %}{{ d.update({'me': d}) }}{{ d | tojson }}").find("nested too deeply"),
              std::string::npos);
    EXPECT_NE(render_error("{% set l = [] %}{{ l.append(l) }}{{ l == l }}").find("nested too deeply"),
              std::string::npos);
    // A 300000-deep chain of lists is dropped mid-render and at the end without deep recursion.
    EXPECT_EQ(render("{% set ns = namespace(l=[]) %}{% for i in range(300000) %}{% set ns.l = [ns.l] %}{% endfor %}"
                     "{% set ns.l = 0 %}done"),
              "done");
}

TEST(ChatTemplateErrors, UndefinedBehavesLikeJinja2) {
    EXPECT_EQ(
        render("[{{ missing }}]{{ missing | default('d') }}{% for x in missing %}x{% endfor %}{{ missing | length }}"),
        "[]d0");
    EXPECT_EQ(render("{{ m.content is defined }}{{ m.nope is defined }}", Json{{"m", {{"content", "x"}}}}),
              "TrueFalse");
    EXPECT_EQ(render("{{ none.x is defined }}{{ 'abc'.nope is defined }}"), "FalseFalse");
}

TEST(ChatApply, ContextHasMessagesToolsKwargsAndDate) {
    Template t = Template::parse(
        "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
        "{{ tools is defined }}{{ enable_thinking }}{{ date_string }} {{ strftime_now('%Y') }}"
        "{% if add_generation_prompt %}>{% endif %}{{ eos_token }}");
    bee::chat::ChatInput in;
    in.messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
    in.kwargs = {{"enable_thinking", false}};
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    in.now_unix = 1741953600;  // 2025-03-14 12:00 UTC
    EXPECT_EQ(bee::chat::apply(t, in), "<s>[user:hi]FalseFalse14 Mar 2025 2025></s>");
    in.tools = Json::array({{{"type", "function"}}});
    in.add_generation_prompt = false;
    EXPECT_EQ(bee::chat::apply(t, in), "<s>[user:hi]TrueFalse14 Mar 2025 2025</s>");
}

TEST(ChatTemplateErrors, StringPlusMissingIsTheString) {
    // llama.cpp's Jinja (unlike jinja2): a string plus an undefined variable is the string; none, the other
    // operators and other operand types still refuse (as jinja2).
    EXPECT_EQ(render("{{ 'a' + missing }}|{{ missing + 'b' }}|{% set m = {} %}{{ 'c' + m.x }}"), "a|b|c");
    EXPECT_NE(render_error("{{ 'c' + none }}").find("unsupported operand"), std::string::npos);
    EXPECT_EQ(render("{% set s = 'x' %}{% set s = s + '\n' + functions %}[{{ s }}]"), "[x\n]");
    EXPECT_EQ(render("{{ ('<b>' | safe) + missing }}"), "<b>");
    EXPECT_NE(render_error("{{ 1 + missing }}").find("'missing' is undefined"), std::string::npos);
    EXPECT_NE(render_error("{{ missing + missing }}").find("undefined"), std::string::npos);
    EXPECT_NE(render_error("{{ [1] + none }}").find("unsupported operand"), std::string::npos);
    EXPECT_NE(render_error("{{ 'a' - missing }}").find("undefined"), std::string::npos);
}

TEST(ChatApply, FirefunctionStyleSystemPromptGetsDatetime) {
    // The shape of firefunction-v2's template: a block set through `filter trim`, then the caller's
    // `functions` (never set by llama-server or Bee) and `datetime` ("%b %d %Y", as llama-server gives it).
    Template t = Template::parse(
        "{%- set suffix -%}{%- filter trim -%}\n  Functions:  \n{%- endfilter -%}{%- endset -%}"
        "{%- set suffix = suffix + '\n' + functions -%}{%- set suffix = suffix + '\nToday is ' + datetime + '.' -%}"
        "{{ suffix }}|{{ messages[0].content }}");
    bee::chat::ChatInput in;
    in.messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
    in.now_unix = 1741953600;  // 2025-03-14 12:00 UTC
    EXPECT_EQ(bee::chat::apply(t, in), "Functions:\n\nToday is Mar 14 2025.|hi");
}

TEST(ChatApply, NullContentOfToolCallTurnsIsRetriedAsEmpty) {
    // Qwen3's template does `'</think>' in message.content`, which fails on null content.
    std::ifstream f(std::string(BEE_SOURCE_DIR) + "/tests/data/chat_templates/Qwen-Qwen3-0.6B.jinja");
    std::stringstream src;
    src << f.rdbuf();
    Template t = Template::parse(src.str());
    bee::chat::ChatInput in;
    in.messages = Json::parse(R"([{"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
          "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "sunny"}])");
    EXPECT_THROW(t.render(Json{{"messages", in.messages}}, 0), bee::Error);
    std::string out = bee::chat::apply(t, in);
    EXPECT_NE(out.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << out;
}

}  // namespace
