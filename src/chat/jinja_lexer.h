// chat/jinja_lexer: splits a template into text and tag tokens, applying whitespace control the way
// jinja2.Environment(trim_blocks=True, lstrip_blocks=True) does ({%- -%} {{- -}} {#- -#} and '+').
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace bee::chat::jinja {

struct Token {
    enum class Kind {
        Text,        // literal template text (whitespace control already applied)
        VarBegin,    // {{
        VarEnd,      // }}
        BlockBegin,  // {%
        BlockEnd,    // %}
        Name,        // identifiers and keywords
        Int,
        Float,
        String,  // value has escapes resolved
        Op,      // operators and punctuation: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
        End,
    };
    Kind kind;
    std::string value;
    int line = 1, col = 1;
};

// Throws bee::Error "chat template: <line>:<col>: ..." on unterminated tags, strings or bad characters.
std::vector<Token> lex(std::string_view source);

}  // namespace bee::chat::jinja
