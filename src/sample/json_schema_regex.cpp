// sample/json_schema_regex: a JSON Schema `pattern` (a subset of ECMA-262 regular expressions) as a GBNF
// expression for the whole JSON string, quotes included: the regex describes the string's decoded
// characters, so `"`, `\` and control characters are written as the JSON escapes that encode them.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "sample/json_schema.h"

namespace bee {

namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive code point ranges, sorted, disjoint

constexpr uint32_t kMaxCp = 0x10FFFF;
// Groups inside groups: each level may become three GBNF groups, well inside kGrammarMaxNesting.
constexpr size_t kMaxRegexNesting = 64;

Ranges normalize(Ranges r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (auto [lo, hi] : r) {
        if (!out.empty() && lo <= out.back().second + 1) out.back().second = std::max(out.back().second, hi);
        else out.push_back({lo, hi});
    }
    return out;
}

Ranges complement(const Ranges& in) {
    Ranges out;
    uint32_t next = 0;
    for (auto [lo, hi] : normalize(in)) {
        if (lo > next) out.push_back({next, lo - 1});
        next = hi + 1;
    }
    if (next <= kMaxCp) out.push_back({next, kMaxCp});
    return out;
}

// ECMA's \d \w \s (\s: ASCII white space and no-break space; the other Unicode spaces are left out).
const Ranges kDigit = {{'0', '9'}}, kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}};

std::string cp_escape(uint32_t c) { return c < 0x10000 ? strfmt("\\u%04X", c) : strfmt("\\U%08X", c); }

// The JSON text of one character that must be escaped inside a string.
std::string json_escape(uint32_t c) {
    switch (c) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\n': return "\\n";
        case '\r': return "\\r";
        case '\t': return "\\t";
        case '\b': return "\\b";
        case '\f': return "\\f";
        default: return strfmt("\\u%04x", c);
    }
}

// A set of characters as GBNF for their JSON-encoded form: one class for the characters written as
// themselves, plus one literal per character that JSON escapes.
std::string set_expr(const Ranges& set) {
    const Ranges specials = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0xD800, 0xDFFF}};  // surrogates: not in UTF-8
    std::string cls;
    std::vector<std::string> alts;
    for (auto [lo, hi] : normalize(set)) {
        for (uint32_t c = lo; c <= std::min<uint32_t>(hi, 0x5C); c++)  // the escaped ones sit below 0x5D
            if (c < 0x20 || c == '"' || c == '\\') alts.push_back(gbnf_literal(json_escape(c)));
    }
    Ranges plain;
    for (auto [lo, hi] : complement(specials))
        for (auto [a, b] : set)
            if (std::max(lo, a) <= std::min(hi, b)) plain.push_back({std::max(lo, a), std::min(hi, b)});
    for (auto [lo, hi] : normalize(plain)) cls += cp_escape(lo) + (hi > lo ? "-" + cp_escape(hi) : "");
    if (!cls.empty()) alts.insert(alts.begin(), "[" + cls + "]");
    if (alts.empty()) return "[^\\u0000-\\U0010FFFF]";  // an empty set matches nothing
    if (alts.size() == 1) return alts[0];
    std::string out;
    for (const std::string& a : alts) out += (out.empty() ? "( " : " | ") + a;
    return out + " )";
}

std::vector<uint32_t> decode_utf8(const std::string& s, const std::string& path) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = (unsigned char)s[i];
        const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size())
            fail("json_schema: 'pattern' at %s is not valid UTF-8; fix the schema", path.c_str());
        uint32_t cp = n == 1 ? c : c & (0x7F >> n);
        for (int k = 1; k < n; k++) cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3F);
        out.push_back(cp);
        i += n;
    }
    return out;
}

// Recursive descent over the pattern: alternation -> concatenation -> quantified atom.
class RegexParser {
public:
    RegexParser(const std::string& pattern, const std::string& path)
        : pattern_(pattern), path_(path), cp_(decode_utf8(pattern, path)) {}

    std::string parse() {
        bool start = false, end = false;
        if (!cp_.empty() && cp_[0] == '^') start = true, pos_ = 1;
        size_t stop = cp_.size();
        if (stop > pos_ && cp_[stop - 1] == '$') {  // an unescaped trailing $ (count the backslashes before it)
            size_t bs = 0;
            while (stop - 1 - bs > pos_ && cp_[stop - 2 - bs] == '\\') bs++;
            if (bs % 2 == 0) end = true, cp_.pop_back();
        }
        std::string body = alternation();
        if (pos_ < cp_.size()) error(cp_[pos_] == ')' ? "an unmatched ')'" : "an unexpected character");
        // An unanchored pattern matches anywhere in the string (JSON Schema's search semantics).
        return "\"\\\"\" " + std::string(start ? "" : "json-char* ") + "( " + body + " )" + (end ? "" : " json-char*") +
               " \"\\\"\"";
    }

private:
    [[noreturn]] void error(const std::string& what) const {
        fail(
            "json_schema: 'pattern' \"%s\" at %s: %s at character %zu; supported: literals, escapes, [classes], "
            "\\d \\w \\s, '.', groups (...) and (?:...), '|', ? * + {m,n}, ^ at the start and $ at the end",
            pattern_.c_str(), path_.c_str(), what.c_str(), pos_);
    }
    bool more() const { return pos_ < cp_.size(); }
    uint32_t peek() const { return cp_[pos_]; }

    // Each parse function leaves in nullable_ whether what it returns can match the empty string.
    std::string alternation() {
        std::string out = concatenation();
        bool alt = false, nullable = nullable_;
        while (more() && peek() == '|') {
            pos_++;
            out += " | " + concatenation();
            nullable = nullable || nullable_;
            alt = true;
        }
        nullable_ = nullable;
        return alt ? "( " + out + " )" : out;
    }

    std::string concatenation() {
        std::string out;
        bool nullable = true;
        while (more() && peek() != '|' && peek() != ')') {
            const std::string a = quantified(atom());
            nullable = nullable && nullable_;
            out += (out.empty() ? "" : " ") + a;
        }
        nullable_ = nullable;
        return out.empty() ? "\"\"" : out;
    }

    uint64_t number() {
        if (!more() || peek() < '0' || peek() > '9') error("a '{' without a count");
        uint64_t v = 0;
        while (more() && peek() >= '0' && peek() <= '9') {
            v = v * 10 + (peek() - '0');
            if (v > 1000) error("a repetition count above 1000");
            pos_++;
        }
        return v;
    }

    std::string quantified(const std::string& a) {
        if (!more()) return a;
        std::string q;
        const uint32_t c = peek();
        if (c == '?' || c == '*' || c == '+') {
            q = std::string(1, (char)c);
            pos_++;
        } else if (c == '{') {
            pos_++;
            const uint64_t m = number();
            q = "{" + std::to_string(m);
            if (more() && peek() == ',') {
                pos_++;
                q += ",";
                if (more() && peek() != '}') {
                    const uint64_t n = number();
                    if (n < m) error("a repetition {m,n} with n < m");
                    q += std::to_string(n);
                }
            }
            if (!more() || peek() != '}') error("an unclosed '{'");
            pos_++;
            q += "}";
        } else {
            return a;
        }
        if (more() && peek() == '?') pos_++;  // lazy: the same set of matches, so the same grammar
        if (more() && (peek() == '?' || peek() == '*' || peek() == '+' || peek() == '{'))
            error("a repeated quantifier");
        // An unbounded repetition of something that can match nothing would loop without consuming text.
        const bool unbounded = c == '*' || c == '+' || q.find(",}") != std::string::npos;
        if (unbounded && nullable_) error("'*', '+' or '{m,}' on a group that can match the empty string, e.g. (a*)+");
        nullable_ = nullable_ || c == '?' || c == '*' || q.rfind("{0", 0) == 0;
        return "( " + a + " )" + q;
    }

    std::string atom() {
        const uint32_t c = peek();
        pos_++;
        nullable_ = false;
        switch (c) {
            case '(': {
                if (++depth_ > kMaxRegexNesting) {
                    pos_--;
                    error(strfmt("groups nested deeper than %zu (the nesting limit)", kMaxRegexNesting));
                }
                if (more() && peek() == '?') {
                    if (pos_ + 1 < cp_.size() && cp_[pos_ + 1] == ':') pos_ += 2;
                    else error("a lookaround or named group '(?'");
                }
                const std::string inner = alternation();
                if (!more() || peek() != ')') error("an unclosed '('");
                pos_++;
                depth_--;
                return "( " + inner + " )";  // nullable_: the inner alternation's
            }
            case '[': return set_expr(char_class());
            case '.': return set_expr(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
            case '\\': {
                Ranges set;
                if (escape(false, set)) return set_expr(set);
                return set_expr({{set[0]}});
            }
            case '^': pos_--; error("'^' not at the start");
            case '$': pos_--; error("'$' not at the end");
            case '*':
            case '+':
            case '?':
            case '{': pos_--; error("a quantifier with nothing before it");
            default: return set_expr({{c, c}});
        }
    }

    // After a backslash: fills `set` and returns true for \d \w \s and their negations, else sets
    // set[0] to the one character escaped and returns false.
    bool escape(bool in_class, Ranges& set) {
        if (!more()) error("a pattern ending in '\\'");
        const uint32_t e = peek();
        pos_++;
        switch (e) {
            case 'd': set = kDigit; return true;
            case 'w': set = kWord; return true;
            case 's': set = kSpace; return true;
            case 'D': set = complement(kDigit); return true;
            case 'W': set = complement(kWord); return true;
            case 'S': set = complement(kSpace); return true;
            case 't': set = {{'\t', '\t'}}; return false;
            case 'n': set = {{'\n', '\n'}}; return false;
            case 'r': set = {{'\r', '\r'}}; return false;
            case 'f': set = {{'\f', '\f'}}; return false;
            case 'v': set = {{'\v', '\v'}}; return false;
            case '0': set = {{0, 0}}; return false;
            case 'x':
            case 'u': {
                const int n = e == 'x' ? 2 : 4;
                uint32_t v = 0;
                for (int k = 0; k < n; k++, pos_++) {
                    if (!more() || peek() > 0x7F || !std::isxdigit((int)peek()))
                        error(strfmt("'\\%c' without %d hex digits", (char)e, n));
                    v = v * 16 + (uint32_t)std::stoi(std::string(1, (char)peek()), nullptr, 16);
                }
                set = {{v, v}};
                return false;
            }
            case 'b':
                if (in_class) {
                    set = {{'\b', '\b'}};
                    return false;
                }
                break;
            default:
                if (e < 0x80 && !std::isalnum((int)e)) {
                    set = {{e, e}};
                    return false;
                }  // \. \( \\ ...
        }
        pos_--;
        error(strfmt("the escape '\\%c' (word boundaries, backreferences, \\p{...} are not supported)", (char)e));
    }

    // After '[': the class's set (a negated class is complemented here).
    Ranges char_class() {
        const bool negated = more() && peek() == '^';
        if (negated) pos_++;
        Ranges set;
        bool first = true;
        while (true) {
            if (!more()) error("an unclosed '['");
            if (peek() == ']' && !first) break;
            if (peek() == ']') error("an empty class '[]'");
            first = false;
            Ranges item;
            bool is_set = false;
            if (peek() == '\\') {
                pos_++;
                is_set = escape(true, item);
            } else {
                item = {{peek(), peek()}};
                pos_++;
            }
            if (!is_set && pos_ + 1 < cp_.size() && peek() == '-' && cp_[pos_ + 1] != ']') {
                pos_++;
                Ranges to;
                if (peek() == '\\') {
                    pos_++;
                    if (escape(true, to)) error("a range ending in a class escape");
                } else {
                    to = {{peek(), peek()}};
                    pos_++;
                }
                if (to[0].first < item[0].first) error("a range out of order");
                item = {{item[0].first, to[0].first}};
            }
            set.insert(set.end(), item.begin(), item.end());
        }
        pos_++;
        return negated ? complement(set) : normalize(set);
    }

    const std::string& pattern_;
    const std::string& path_;
    std::vector<uint32_t> cp_;
    size_t pos_ = 0;
    size_t depth_ = 0;       // groups open at pos_
    bool nullable_ = false;  // see alternation()
};

}  // namespace

std::string gbnf_regex_string(const std::string& pattern, const std::string& path) {
    return RegexParser(pattern, path).parse();
}

}  // namespace bee
