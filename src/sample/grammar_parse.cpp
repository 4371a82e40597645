// sample/grammar_parse: the GBNF parser (llama.cpp's grammar syntax, see grammar.h). Repetition and
// groups are rewritten into generated right-recursive rules, so the matcher only knows sequences,
// alternatives, code point sets and rule references. Nesting and size are bounded (kGrammarMaxNesting,
// kGrammarMaxSymbols in grammar.h), and no pass recurses on the grammar's shape beyond that nesting.
#include <algorithm>
#include <map>

#include "base/error.h"
#include "sample/grammar.h"

namespace bee {

namespace {

constexpr uint32_t kMaxRepeat = 1000;  // {m,n} bounds: each repetition is a copy of the item

struct Sym {
    bool is_rule = false;
    uint32_t rule = 0;
    bool negated = false;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
};
using Seq = std::vector<Sym>;
using Alts = std::vector<Seq>;

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class Parser {
public:
    explicit Parser(std::string_view src) : s_(src) {}

    std::shared_ptr<const Grammar> run() {
        skip_space(true);
        while (pos_ < s_.size()) {
            parse_rule();
            skip_space(true);
        }
        return finish();
    }

private:
    [[noreturn]] void error(size_t at, const std::string& what, const char* fix) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < s_.size(); i++) {
            if (s_[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        fail("grammar: line %zu, column %zu: %s; %s", line, col, what.c_str(), fix);
    }

    char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
    bool eof() const { return pos_ >= s_.size(); }

    // Spaces, tabs and # comments; newlines too when `newlines` (inside groups, after `|` or `::=`).
    void skip_space(bool newlines) {
        while (!eof()) {
            const char c = peek();
            if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
                pos_++;
            } else if (c == '#') {
                while (!eof() && peek() != '\n') pos_++;
            } else {
                return;
            }
        }
    }

    uint32_t rule_id(const std::string& name, size_t at) {
        auto it = ids_.find(name);
        if (it != ids_.end()) return it->second;
        const uint32_t id = (uint32_t)rules_.size();
        ids_[name] = id;
        names_.push_back(name);
        rules_.emplace_back();
        defined_.push_back(false);
        first_use_.push_back(at);
        return id;
    }

    // Counts n more elements against kGrammarMaxSymbols (the whole grammar once repetitions are expanded).
    void charge(size_t n, size_t at) {
        n_symbols_ += n;
        if (n_symbols_ > kGrammarMaxSymbols)
            error(at,
                  strfmt("the grammar expands to more than %zu elements (the compiled-size budget)",
                         kGrammarMaxSymbols),
                  "use '*' or '+' instead of large {m,n} counts, and fewer or shorter alternatives");
    }

    uint32_t new_helper(const std::string& base, Alts alts) {
        const uint32_t id = rule_id(base + "_" + std::to_string(rules_.size()), pos_);
        rules_[id] = std::move(alts);
        defined_[id] = true;
        return id;
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (is_name_char(peek())) pos_++;
        if (pos_ == start) error(start, "expected a rule name", "names use letters, digits, '-' and '_'");
        return std::string(s_.substr(start, pos_ - start));
    }

    void parse_rule() {
        const size_t at = pos_;
        const std::string name = parse_name();
        skip_space(false);
        if (s_.substr(pos_, 3) != "::=")
            error(pos_, "expected '::=' after rule name '" + name + "'", "write `name ::= definition`");
        pos_ += 3;
        skip_space(true);
        const uint32_t id = rule_id(name, at);
        if (defined_[id]) error(at, "rule '" + name + "' is defined twice", "merge the definitions with '|'");
        rules_[id] = parse_alternatives(name, false);
        defined_[id] = true;
        skip_space(false);
        if (!eof() && peek() != '\n')
            error(pos_, strfmt("unexpected '%c'", peek()), "check for a missing '|', quote or bracket");
    }

    Alts parse_alternatives(const std::string& rule, bool nested) {
        Alts alts;
        charge(1, pos_);  // each alternative ends with an `end` element
        alts.push_back(parse_sequence(rule, nested));
        for (;;) {
            if (!nested) {  // a continuation line starting with '|' still belongs to this rule
                size_t p = pos_;
                while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\r' || s_[p] == '\n')) p++;
                if (p < s_.size() && s_[p] == '|') pos_ = p;
            }
            if (peek() != '|') return alts;
            pos_++;
            skip_space(true);
            charge(1, pos_);
            alts.push_back(parse_sequence(rule, nested));
        }
    }

    // One code point of a literal or class, with escapes. UTF-8 in the source is decoded.
    uint32_t parse_char() {
        const size_t at = pos_;
        const unsigned char c = (unsigned char)peek();
        if (c == '\\') {
            pos_++;
            const char e = peek();
            pos_++;
            switch (e) {
                case 'n': return '\n';
                case 'r': return '\r';
                case 't': return '\t';
                case '0': return 0;
                case '\\':
                case '"':
                case '\'':
                case '[':
                case ']':
                case '-':
                case '/':
                case '^': return (uint32_t)e;
                case 'x': return parse_hex(2, at);
                case 'u': return parse_hex(4, at);
                case 'U': return parse_hex(8, at);
                default:
                    error(at, strfmt("unknown escape '\\%c'", e),
                          "use \\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH or \\UHHHHHHHH");
            }
        }
        int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
        if (n < 0) error(at, "invalid UTF-8 byte", "save the grammar as UTF-8");
        uint32_t cp = n == 0 ? c : c & (0x3f >> n);
        pos_++;
        for (; n > 0; n--) {
            const unsigned char b = (unsigned char)peek();
            if ((b & 0xc0) != 0x80) error(at, "truncated UTF-8 character", "save the grammar as UTF-8");
            cp = (cp << 6) | (b & 0x3f);
            pos_++;
        }
        return cp;
    }

    uint32_t parse_hex(int digits, size_t at) {
        uint32_t v = 0;
        for (int i = 0; i < digits; i++) {
            const char h = peek();
            int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
            if (d < 0) error(at, strfmt("escape needs %d hex digits", digits), "e.g. \\x41, \\u00e9, \\U0001F600");
            v = v * 16 + (uint32_t)d;
            pos_++;
        }
        if (v > 0x10FFFF) error(at, "code point beyond U+10FFFF", "use a valid Unicode code point");
        return v;
    }

    void parse_literal(Seq& seq) {
        const size_t at = pos_;
        pos_++;  // opening quote
        while (peek() != '"') {
            if (eof() || peek() == '\n')
                error(at, "unterminated string literal", "close it with '\"' on the same line");
            const uint32_t cp = parse_char();
            Sym sym;
            sym.ranges.push_back({cp, cp});
            seq.push_back(std::move(sym));
        }
        pos_++;
    }

    void parse_class(Seq& seq) {
        const size_t at = pos_;
        pos_++;  // '['
        Sym sym;
        if (peek() == '^') {
            sym.negated = true;
            pos_++;
        }
        while (peek() != ']') {
            if (eof() || peek() == '\n') error(at, "unterminated character class", "close it with ']'");
            const uint32_t lo = parse_char();
            uint32_t hi = lo;
            if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
                pos_++;
                hi = parse_char();
                if (hi < lo) error(at, "character range is reversed", "write ranges low-high, e.g. [a-z]");
            }
            sym.ranges.push_back({lo, hi});
        }
        if (sym.ranges.empty()) error(at, "empty character class '[]'", "list at least one character");
        pos_++;
        seq.push_back(std::move(sym));
    }

    // `<[id]>`: one whole token by id (see kGrammarTokenBase).
    void parse_token(Seq& seq) {
        const size_t at = pos_;
        if (peek(1) != '[') error(at, "expected '<[' to start a token", "write a token by id as <[123]>");
        pos_ += 2;
        if (!(peek() >= '0' && peek() <= '9'))
            error(at, "expected a token id in <[...]>", "write a token by id as <[123]>");
        uint32_t id = 0;
        while (peek() >= '0' && peek() <= '9') {
            id = id * 10 + (uint32_t)(peek() - '0');
            if (id > kGrammarMaxTokenId)
                error(at, "token id too large", "use the id of a token of the model's vocabulary");
            pos_++;
        }
        if (peek() != ']' || peek(1) != '>') error(at, "unclosed token '<[id'", "close it with ']>'");
        pos_ += 2;
        Sym sym;
        sym.ranges.push_back({kGrammarTokenBase + id, kGrammarTokenBase + id});
        seq.push_back(std::move(sym));
    }

    uint32_t parse_count() {
        const size_t at = pos_;
        uint64_t v = 0;
        if (!(peek() >= '0' && peek() <= '9')) error(at, "expected a number in {m,n}", "write {m}, {m,} or {m,n}");
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + (uint64_t)(peek() - '0');
            if (v > kMaxRepeat)
                error(at, strfmt("repetition count above %u", kMaxRepeat), "use '*' or '+' for long repetitions");
            pos_++;
        }
        return (uint32_t)v;
    }

    // Applies a postfix operator to seq[start..]: the item is replaced by a reference to a new rule.
    void apply_postfix(Seq& seq, size_t start, const std::string& rule) {
        const size_t at = pos_;
        if (start >= seq.size())
            error(at, strfmt("'%c' has nothing to repeat", peek()), "put it after a literal, class, rule or group");
        auto ref = [](uint32_t id) {
            Sym s;
            s.is_rule = true;
            s.rule = id;
            return s;
        };
        // A multi-element item (a literal) becomes a rule of its own, so each copy below is one element:
        // "<1,000 characters>"{1000} costs 2,000 elements, not a million.
        Seq item(seq.begin() + (std::ptrdiff_t)start, seq.end());
        seq.resize(start);
        if (item.size() > 1) {
            charge(2, at);
            item = Seq{ref(new_helper(rule, {item}))};
        }
        auto star = [&] {  // R ::= item R | (empty)
            const uint32_t id = new_helper(rule, {});
            Seq loop = item;
            loop.push_back(ref(id));
            rules_[id] = {loop, Seq{}};
            return id;
        };
        const char op = peek();
        pos_++;
        uint32_t min = 0, max = 0;
        bool unbounded = false;
        if (op == '*' || op == '+') {
            min = op == '+' ? 1 : 0;
            unbounded = true;
        } else if (op == '?') {
            max = 1;
        } else {  // {m}, {m,}, {m,n}
            skip_space(false);
            min = max = parse_count();
            skip_space(false);
            if (peek() == ',') {
                pos_++;
                skip_space(false);
                if (peek() == '}') unbounded = true;
                else max = parse_count();
                skip_space(false);
            }
            if (peek() != '}') error(pos_, "expected '}' to close the repetition", "write {m}, {m,} or {m,n}");
            pos_++;
            if (!unbounded && max < min) error(at, "repetition {m,n} has n < m", "make n >= m");
        }
        charge(min + 1 + (unbounded ? 4 : 4 * (size_t)(max - min)), at);  // the copies, the helpers below
        for (uint32_t i = 0; i < min; i++) seq.insert(seq.end(), item.begin(), item.end());
        if (unbounded) {
            seq.push_back(ref(star()));
            return;
        }
        // (max - min) optional copies, nested so that each needs the one before: R_k ::= item R_{k-1} | ε
        bool have = false;
        uint32_t inner = 0;
        for (uint32_t k = min; k < max; k++) {
            Seq some = item;
            if (have) some.push_back(ref(inner));
            inner = new_helper(rule, {some, Seq{}});
            have = true;
        }
        if (have) seq.push_back(ref(inner));
    }

    Seq parse_sequence(const std::string& rule, bool nested) {
        Seq seq;
        size_t last = seq.size();
        bool has_item = false;
        for (;;) {
            skip_space(nested);
            const char c = peek();
            const size_t start = seq.size();
            if (c == '"') {
                parse_literal(seq);
            } else if (c == '[') {
                parse_class(seq);
            } else if (c == '<') {
                parse_token(seq);
            } else if (c == '.') {
                pos_++;
                Sym any;
                any.negated = true;  // nothing excluded: any code point
                seq.push_back(std::move(any));
            } else if (c == '(') {
                const size_t at = pos_;
                if (++depth_ > kGrammarMaxNesting)
                    error(at, strfmt("groups nested deeper than %u (the nesting limit)", kGrammarMaxNesting),
                          "move inner groups into named rules");
                pos_++;
                skip_space(true);
                Alts sub = parse_alternatives(rule, true);
                skip_space(true);
                if (peek() != ')') error(at, "unclosed '('", "add the matching ')'");
                pos_++;
                depth_--;
                Sym s;
                s.is_rule = true;
                s.rule = new_helper(rule, std::move(sub));
                seq.push_back(std::move(s));
            } else if (is_name_char(c)) {
                const size_t at = pos_;
                const std::string name = parse_name();
                size_t p = pos_;
                while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t')) p++;
                if (s_.substr(p, 3) == "::=") {  // the next rule starts: this one ended at a line break
                    if (!nested) {
                        pos_ = at;
                        return seq;
                    }
                    error(at, "rule definition inside a group", "close the group with ')' first");
                }
                Sym s;
                s.is_rule = true;
                s.rule = rule_id(name, at);
                seq.push_back(std::move(s));
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (!has_item)
                    error(pos_, strfmt("'%c' has nothing to repeat", c),
                          "put it after a literal, class, rule or group");
                apply_postfix(seq, last, rule);
                continue;
            } else {
                return seq;  // '|', ')', end of line or of text; anything else is reported by the caller
            }
            charge(seq.size() - start, pos_);
            last = start;
            has_item = true;
        }
    }

    std::shared_ptr<const Grammar> finish() {
        if (rules_.empty()) fail("grammar: empty grammar; define at least `root ::= ...`");
        for (size_t i = 0; i < rules_.size(); i++)
            if (!defined_[i])
                error(first_use_[i], "undefined rule '" + names_[i] + "'",
                      "define it (`name ::= ...`) or fix the name");
        auto root = ids_.find("root");
        if (root == ids_.end() || !defined_[root->second])
            fail("grammar: no 'root' rule; the grammar starts at `root ::= ...`");
        check_left_recursion();
        auto g = std::make_shared<Grammar>();
        g->names = names_;
        g->root = root->second;
        g->rules.resize(rules_.size());
        for (size_t r = 0; r < rules_.size(); r++) {
            for (const Seq& alt : rules_[r]) {
                g->rules[r].push_back((uint32_t)g->elems.size());
                for (const Sym& s : alt) {
                    GrammarElem e;
                    e.kind = s.is_rule ? GrammarElem::rule : GrammarElem::chars;
                    e.rule_id = s.rule;
                    e.negated = s.negated;
                    e.ranges = s.ranges;
                    if (!s.is_rule && !s.negated && !s.ranges.empty() && s.ranges[0].first >= kGrammarTokenBase)
                        g->tokens.push_back((int32_t)(s.ranges[0].first - kGrammarTokenBase));
                    g->elems.push_back(std::move(e));
                }
                g->elems.push_back(GrammarElem{});  // end
            }
        }
        std::sort(g->tokens.begin(), g->tokens.end());
        g->tokens.erase(std::unique(g->tokens.begin(), g->tokens.end()), g->tokens.end());
        GrammarMatcher probe(g);  // throws if its start alone is over the matcher's budgets
        return g;
    }

    // A rule that can reach itself before consuming any text would send the matcher into an endless
    // expansion: refuse it here.
    void check_left_recursion() const {
        const size_t n = rules_.size();
        std::vector<bool> nullable(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; r++) {
                if (nullable[r]) continue;
                for (const Seq& alt : rules_[r]) {
                    const bool all = std::all_of(alt.begin(), alt.end(),
                                                 [&](const Sym& s) { return s.is_rule && nullable[s.rule]; });
                    if (all) {
                        nullable[r] = changed = true;
                        break;
                    }
                }
            }
        }
        std::vector<std::vector<uint32_t>> left(n);  // rules reachable at the left edge of each rule
        for (size_t r = 0; r < n; r++)
            for (const Seq& alt : rules_[r])
                for (const Sym& s : alt) {
                    if (!s.is_rule) break;
                    left[r].push_back(s.rule);
                    if (!nullable[s.rule]) break;
                }
        // Depth-first search for a cycle, with an explicit stack: (rule, next edge to follow).
        std::vector<int> mark(n, 0);  // 0 new, 1 on the DFS path, 2 done
        std::vector<std::pair<uint32_t, size_t>> path;
        for (uint32_t r0 = 0; r0 < n; r0++) {
            if (mark[r0] != 0) continue;
            mark[r0] = 1;
            path.push_back({r0, 0});
            while (!path.empty()) {
                auto& [r, i] = path.back();
                if (i == left[r].size()) {
                    mark[r] = 2;
                    path.pop_back();
                    continue;
                }
                const uint32_t t = left[r][i++];
                if (mark[t] == 1)
                    fail(
                        "grammar: rule '%s' is left-recursive (it can reach itself without consuming text); rewrite it "
                        "with repetition, e.g. `list ::= item (\",\" item)*`",
                        names_[t].c_str());
                if (mark[t] == 0) {
                    mark[t] = 1;
                    path.push_back({t, 0});
                }
            }
        }
    }

    std::string_view s_;
    size_t pos_ = 0;
    uint32_t depth_ = 0;    // groups open at pos_
    size_t n_symbols_ = 0;  // elements so far, against kGrammarMaxSymbols
    std::map<std::string, uint32_t> ids_;
    std::vector<std::string> names_;
    std::vector<Alts> rules_;
    std::vector<bool> defined_;
    std::vector<size_t> first_use_;
};

}  // namespace

std::shared_ptr<const Grammar> Grammar::parse(std::string_view text) { return Parser(text).run(); }

}  // namespace bee
