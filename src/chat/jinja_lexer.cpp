// chat/jinja_lexer: text/tag splitting with jinja2's whitespace rules, and expression tokens.
#include "chat/jinja_lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/error.h"

namespace bee::chat::jinja {
namespace {

class Lexer {
public:
    explicit Lexer(std::string_view src) : src_(src) {
        // jinja2's default keep_trailing_newline=False drops one trailing newline of the source.
        if (!src_.empty() && src_.back() == '\n') src_.remove_suffix(1);
        line_starts_.push_back(0);
        for (size_t k = 0; k < src_.size(); ++k)
            if (src_[k] == '\n') line_starts_.push_back(k + 1);
    }

    std::vector<Token> run() {
        size_t pos = 0;
        bool line_starting = true;  // what precedes the next text ends a line (lstrip_blocks)
        while (pos < src_.size()) {
            size_t start = find_tag(pos);
            std::string text(src_.substr(pos, start - pos));
            if (start == src_.size()) {
                push_text(std::move(text), pos);
                break;
            }
            const char type = src_[start + 1];  // '{', '%' or '#'
            const char mod = start + 2 < src_.size() ? src_[start + 2] : 0;
            if (mod == '-') {
                size_t keep = text.find_last_not_of(" \t\r\n\f\v");
                text.resize(keep == std::string::npos ? 0 : keep + 1);
            } else if (mod != '+' && type != '{') {
                lstrip_line(text, line_starting);
            }
            push_text(std::move(text), pos);
            size_t body = start + 2 + (mod == '-' || mod == '+' ? 1 : 0);
            char end_mod = 0;
            if (type == '#') {
                size_t close = src_.find("#}", body);
                if (close == std::string_view::npos) error(start, "unterminated comment (missing '#}')");
                end_mod = close > body && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
                pos = close + 2;
            } else {
                pos = lex_tag(start, body, type, &end_mod);
            }
            line_starting = false;
            if (end_mod != '-' && end_mod != '+' && type != '{' && pos < src_.size() && src_[pos] == '\n') {
                ++pos;  // trim_blocks: the first newline after a block or comment tag goes
                line_starting = true;
            }
            if (end_mod == '-') {  // '-' at the end of a tag eats all following whitespace
                size_t ws = pos;
                while (ws < src_.size() && std::isspace(static_cast<unsigned char>(src_[ws]))) ++ws;
                line_starting = ws > pos && src_[ws - 1] == '\n';
                pos = ws;
            }
        }
        out_.push_back(Token{Token::Kind::End, "", line_of(src_.size()), col_of(src_.size())});
        return std::move(out_);
    }

private:
    std::string_view src_;
    std::vector<Token> out_;
    std::vector<size_t> line_starts_;  // offset of the first character of each line

    [[noreturn]] void error(size_t at, const std::string& what) const {
        fail("chat template: %d:%d: %s", line_of(at), col_of(at), what.c_str());
    }
    int line_of(size_t at) const {
        return int(std::upper_bound(line_starts_.begin(), line_starts_.end(), at) - line_starts_.begin());
    }
    int col_of(size_t at) const { return int(at - line_starts_[size_t(line_of(at)) - 1]) + 1; }

    size_t find_tag(size_t pos) const {
        for (size_t k = pos; k + 1 < src_.size(); ++k)
            if (src_[k] == '{' && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
        return src_.size();
    }

    // lstrip_blocks: spaces and tabs between the start of a line and a block tag are removed.
    static void lstrip_line(std::string& text, bool line_starting) {
        size_t nl = text.rfind('\n');
        size_t from = nl == std::string::npos ? 0 : nl + 1;
        if (from == 0 && !line_starting) return;
        for (size_t k = from; k < text.size(); ++k)
            if (text[k] != ' ' && text[k] != '\t') return;
        text.resize(from);
    }

    void push_text(std::string text, size_t at) {
        if (!text.empty()) out_.push_back(Token{Token::Kind::Text, std::move(text), line_of(at), col_of(at)});
    }

    void push(Token::Kind kind, std::string value, size_t at) {
        out_.push_back(Token{kind, std::move(value), line_of(at), col_of(at)});
    }

    // Lexes the expression tokens of a {{ }} or {% %} tag; returns the position after its end.
    size_t lex_tag(size_t start, size_t pos, char type, char* end_mod) {
        const bool is_var = type == '{';
        push(is_var ? Token::Kind::VarBegin : Token::Kind::BlockBegin, "", start);
        const char close = is_var ? '}' : '%';
        int depth = 0;  // open brackets: "}}" inside a dict literal does not end the tag
        while (true) {
            while (pos < src_.size() && std::isspace(static_cast<unsigned char>(src_[pos]))) ++pos;
            if (pos >= src_.size())
                error(start, is_var ? "unterminated '{{' (missing '}}')" : "unterminated '{%' (missing '%}')");
            char c = src_[pos];
            if (depth == 0 || !is_var) {
                for (char m : {'-', '+', char(0)}) {
                    size_t at = pos + (m ? 1 : 0);
                    if ((m == 0 || c == m) && at + 1 < src_.size() && src_[at] == close && src_[at + 1] == '}') {
                        *end_mod = m;
                        push(is_var ? Token::Kind::VarEnd : Token::Kind::BlockEnd, "", pos);
                        return at + 2;
                    }
                }
            }
            if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                size_t end = pos;
                while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_'))
                    ++end;
                push(Token::Kind::Name, std::string(src_.substr(pos, end - pos)), pos);
                pos = end;
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                pos = lex_number(pos);
            } else if (c == '\'' || c == '"') {
                pos = lex_string(pos);
            } else {
                static const char* two[] = {"//", "**", "==", "!=", "<=", ">="};
                size_t len = 1;
                for (const char* t : two)
                    if (src_.substr(pos, 2) == t) len = 2;
                std::string op(src_.substr(pos, len));
                if (op.size() == 1 && std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos)
                    error(pos, strfmt("unexpected character '%c' in a tag", c));
                if (c == '(' || c == '[' || c == '{') ++depth;
                if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
                push(Token::Kind::Op, op, pos);
                pos += op.size();
            }
        }
    }

    size_t lex_number(size_t pos) {
        size_t end = pos;
        while (end < src_.size() && std::isdigit(static_cast<unsigned char>(src_[end]))) ++end;
        bool is_float = false;
        if (end + 1 < src_.size() && src_[end] == '.' && std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
            is_float = true;
            ++end;
            while (end < src_.size() && std::isdigit(static_cast<unsigned char>(src_[end]))) ++end;
        }
        if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
            size_t e = end + 1;
            if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
            if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
                is_float = true;
                end = e;
                while (end < src_.size() && std::isdigit(static_cast<unsigned char>(src_[end]))) ++end;
            }
        }
        std::string text(src_.substr(pos, end - pos));
        if (!is_float && text.size() > 18) error(pos, "integer literal too large");
        push(is_float ? Token::Kind::Float : Token::Kind::Int, text, pos);
        return end;
    }

    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += char(cp);
        } else if (cp < 0x800) {
            out += char(0xC0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += char(0xE0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        } else {
            out += char(0xF0 | (cp >> 18));
            out += char(0x80 | ((cp >> 12) & 0x3F));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
        }
    }

    // Python string literal: \n \t \r \\ \' \" \xNN \uNNNN \0; other backslashes are kept.
    size_t lex_string(size_t pos) {
        const char quote = src_[pos];
        std::string value;
        size_t k = pos + 1;
        while (true) {
            if (k >= src_.size()) error(pos, "unterminated string literal");
            char c = src_[k];
            if (c == quote) break;
            if (c != '\\' || k + 1 >= src_.size()) {
                value += c;
                ++k;
                continue;
            }
            char e = src_[k + 1];
            k += 2;
            switch (e) {
                case 'n': value += '\n'; break;
                case 't': value += '\t'; break;
                case 'r': value += '\r'; break;
                case '0': value += '\0'; break;
                case '\\': value += '\\'; break;
                case '\'': value += '\''; break;
                case '"': value += '"'; break;
                case '\n': break;  // line continuation
                case 'x':
                case 'u': {
                    size_t n = e == 'x' ? 2 : 4;
                    std::string hex(src_.substr(k, n));
                    if (hex.size() != n || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
                        error(k, "bad \\x or \\u escape in a string literal");
                    append_utf8(value, uint32_t(std::strtoul(hex.c_str(), nullptr, 16)));
                    k += n;
                    break;
                }
                default: value += '\\'; value += e;
            }
        }
        push(Token::Kind::String, std::move(value), pos);
        return k + 1;
    }
};

}  // namespace

std::vector<Token> lex(std::string_view source) { return Lexer(source).run(); }

}  // namespace bee::chat::jinja
