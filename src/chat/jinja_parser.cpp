// chat/jinja_parser: recursive-descent parser for the Jinja subset chat templates use. Operator
// precedence follows jinja2's parser: conditional < or < and < not < comparisons/in < + - < ~ < * / // %
// < ** < unary -/+ < postfix (. [] ()) and filters/tests.
#include <cstdlib>

#include "base/error.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace bee::chat::jinja {
namespace {

using TK = Token::Kind;

// note: nesting is bounded so a hostile template ("((((((...") cannot overflow the stack.
constexpr int kMaxDepth = 200;

class Parser {
public:
    explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

    Body parse_all() {
        std::string stop;
        Body body = parse_body({}, &stop);
        return body;
    }

private:
    std::vector<Token> toks_;
    size_t pos_ = 0;
    int depth_ = 0;

    struct DepthGuard {
        Parser& p;
        explicit DepthGuard(Parser& parser) : p(parser) {
            if (++p.depth_ > kMaxDepth) p.error(p.peek(), "template nested too deeply");
        }
        ~DepthGuard() { --p.depth_; }
    };

    const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
    const Token& next() {
        const Token& t = toks_[pos_];
        if (pos_ + 1 < toks_.size()) ++pos_;
        return t;
    }
    bool is_op(const char* op, size_t k = 0) const { return peek(k).kind == TK::Op && peek(k).value == op; }
    bool is_name(const char* name, size_t k = 0) const { return peek(k).kind == TK::Name && peek(k).value == name; }

    [[noreturn]] void error(const Token& at, const std::string& what) const {
        fail("chat template: %d:%d: %s", at.line, at.col, what.c_str());
    }
    static std::string describe(const Token& t) {
        switch (t.kind) {
            case TK::Text: return "text";
            case TK::VarBegin: return "'{{'";
            case TK::VarEnd: return "'}}'";
            case TK::BlockBegin: return "'{%'";
            case TK::BlockEnd: return "'%}'";
            case TK::End: return "end of template";
            case TK::String: return "string";
            default: return "'" + t.value + "'";
        }
    }
    void expect_op(const char* op) {
        if (!is_op(op)) error(peek(), strfmt("expected '%s', found %s", op, describe(peek()).c_str()));
        next();
    }
    void expect(TK kind, const char* what) {
        if (peek().kind != kind) error(peek(), strfmt("expected %s, found %s", what, describe(peek()).c_str()));
        next();
    }
    std::string expect_name() {
        if (peek().kind != TK::Name) error(peek(), "expected a name, found " + describe(peek()));
        return next().value;
    }

    ExprPtr make(Expr::Kind kind, const Token& at) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->line = at.line;
        e->col = at.col;
        return e;
    }
    StmtPtr make_stmt(Stmt::Kind kind, const Token& at) {
        auto s = std::make_unique<Stmt>();
        s->kind = kind;
        s->line = at.line;
        s->col = at.col;
        return s;
    }

    // Parses statements until a block tag named in `stop` (whose "{% name" is consumed and whose name
    // is stored in *stopped_at) or, when `stop` is empty, the end of the template.
    Body parse_body(std::initializer_list<const char*> stop, std::string* stopped_at) {
        DepthGuard guard(*this);
        Body body;
        while (true) {
            const Token& t = peek();
            if (t.kind == TK::End) {
                if (stop.size() == 0) return body;
                error(t, strfmt("unexpected end of template: missing {%% %s %%}", *(stop.end() - 1)));
            }
            if (t.kind == TK::Text) {
                auto s = make_stmt(Stmt::Kind::Text, t);
                s->text = next().value;
                body.push_back(std::move(s));
            } else if (t.kind == TK::VarBegin) {
                auto s = make_stmt(Stmt::Kind::Output, next());
                s->expr = parse_expr();
                expect(TK::VarEnd, "'}}'");
                body.push_back(std::move(s));
            } else if (t.kind == TK::BlockBegin) {
                for (const char* name : stop)
                    if (is_name(name, 1)) {
                        next();
                        *stopped_at = next().value;
                        return body;
                    }
                body.push_back(parse_statement());
            } else {
                error(t, "unexpected " + describe(t));
            }
        }
    }

    StmtPtr parse_statement() {
        const Token& begin = next();  // {%
        const Token& name_tok = peek();
        std::string name = expect_name();
        std::string stop;
        if (name == "if") {
            auto s = make_stmt(Stmt::Kind::If, begin);
            ExprPtr cond = parse_expr();
            expect(TK::BlockEnd, "'%}'");
            Body body = parse_body({"elif", "else", "endif"}, &stop);
            s->branches.emplace_back(std::move(cond), std::move(body));
            while (stop == "elif") {
                cond = parse_expr();
                expect(TK::BlockEnd, "'%}'");
                body = parse_body({"elif", "else", "endif"}, &stop);
                s->branches.emplace_back(std::move(cond), std::move(body));
            }
            if (stop == "else") {
                expect(TK::BlockEnd, "'%}'");
                body = parse_body({"endif"}, &stop);
                s->branches.emplace_back(nullptr, std::move(body));
            }
            expect(TK::BlockEnd, "'%}'");
            return s;
        }
        if (name == "for") {
            auto s = make_stmt(Stmt::Kind::For, begin);
            s->targets.push_back(expect_name());
            while (is_op(",")) {
                next();
                s->targets.push_back(expect_name());
            }
            if (!is_name("in")) error(peek(), "expected 'in' in a for loop");
            next();
            s->expr = parse_expr(false);  // no conditional here: a trailing "if" filters the loop
            if (is_name("if")) {
                next();
                s->cond = parse_expr(false);
            }
            if (is_name("recursive")) error(peek(), "recursive for loops are not supported");
            expect(TK::BlockEnd, "'%}'");
            s->body = parse_body({"else", "endfor"}, &stop);
            if (stop == "else") {
                expect(TK::BlockEnd, "'%}'");
                s->else_body = parse_body({"endfor"}, &stop);
            }
            expect(TK::BlockEnd, "'%}'");
            return s;
        }
        if (name == "set") {
            auto s = make_stmt(Stmt::Kind::Set, begin);
            s->targets.push_back(expect_name());
            if (is_op(".")) {
                next();
                s->text = expect_name();
            }
            while (is_op(",") && s->text.empty()) {
                next();
                s->targets.push_back(expect_name());
            }
            if (peek().kind == TK::BlockEnd && s->targets.size() == 1 && s->text.empty()) {
                next();
                s->kind = Stmt::Kind::SetBlock;
                s->body = parse_body({"endset"}, &stop);
                expect(TK::BlockEnd, "'%}'");
                return s;
            }
            expect_op("=");
            s->expr = parse_tuple_or_expr();
            expect(TK::BlockEnd, "'%}'");
            return s;
        }
        if (name == "macro") {
            auto s = make_stmt(Stmt::Kind::Macro, begin);
            s->text = expect_name();
            expect_op("(");
            while (!is_op(")")) {
                std::string param = expect_name();
                ExprPtr def;
                if (is_op("=")) {
                    next();
                    def = parse_expr();
                }
                s->params.emplace_back(param, std::move(def));
                if (!is_op(",")) break;
                next();
            }
            expect_op(")");
            expect(TK::BlockEnd, "'%}'");
            s->body = parse_body({"endmacro"}, &stop);
            expect(TK::BlockEnd, "'%}'");
            return s;
        }
        if (name == "call") {
            auto s = make_stmt(Stmt::Kind::CallBlock, begin);
            s->expr = parse_expr();
            if (s->expr->kind != Expr::Kind::Call) error(name_tok, "{% call %} needs a macro call");
            expect(TK::BlockEnd, "'%}'");
            s->body = parse_body({"endcall"}, &stop);
            expect(TK::BlockEnd, "'%}'");
            return s;
        }
        if (name == "filter") {
            auto s = make_stmt(Stmt::Kind::FilterBlock, begin);
            ExprPtr placeholder = make(Expr::Kind::Literal, name_tok);
            s->expr = parse_filter(std::move(placeholder));
            expect(TK::BlockEnd, "'%}'");
            s->body = parse_body({"endfilter"}, &stop);
            expect(TK::BlockEnd, "'%}'");
            return s;
        }
        if (name == "generation") {  // Hugging Face's marker for assistant masks: renders its body as is
            auto s = make_stmt(Stmt::Kind::If, begin);
            expect(TK::BlockEnd, "'%}'");
            ExprPtr yes = make(Expr::Kind::Literal, name_tok);
            yes->value = Value::boolean(true);
            s->branches.emplace_back(std::move(yes), parse_body({"endgeneration"}, &stop));
            expect(TK::BlockEnd, "'%}'");
            return s;
        }
        if (name == "break" || name == "continue") {
            auto s = make_stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, begin);
            expect(TK::BlockEnd, "'%}'");
            return s;
        }
        error(name_tok, "unknown or unsupported tag '" + name + "'");
    }

    // "a, b" on the right of a set makes a tuple (list).
    ExprPtr parse_tuple_or_expr() {
        const Token& at = peek();
        ExprPtr first = parse_expr();
        if (!is_op(",")) return first;
        ExprPtr list = make(Expr::Kind::ListLit, at);
        list->name = "tuple";
        list->args.push_back(std::move(first));
        while (is_op(",")) {
            next();
            list->args.push_back(parse_expr());
        }
        return list;
    }

    ExprPtr parse_expr(bool allow_cond = true) {
        DepthGuard guard(*this);
        ExprPtr e = parse_or();
        while (allow_cond && is_name("if")) {
            const Token& at = next();
            ExprPtr cond = make(Expr::Kind::Cond, at);
            ExprPtr test = parse_or();
            ExprPtr other;
            if (is_name("else")) {
                next();
                other = parse_expr();
            }
            cond->args.push_back(std::move(e));
            cond->args.push_back(std::move(test));
            cond->args.push_back(std::move(other));
            e = std::move(cond);
        }
        return e;
    }

    ExprPtr binary(const Token& at, std::string op, ExprPtr l, ExprPtr r) {
        ExprPtr e = make(Expr::Kind::Binary, at);
        e->name = std::move(op);
        e->args.push_back(std::move(l));
        e->args.push_back(std::move(r));
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (is_name("or")) {
            const Token& at = next();
            e = binary(at, "or", std::move(e), parse_and());
        }
        return e;
    }
    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (is_name("and")) {
            const Token& at = next();
            e = binary(at, "and", std::move(e), parse_not());
        }
        return e;
    }
    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            ExprPtr e = make(Expr::Kind::Unary, next());
            e->name = "not";
            e->args.push_back(parse_not());
            return e;
        }
        return parse_compare();
    }
    ExprPtr parse_compare() {
        ExprPtr e = parse_math1();
        while (true) {
            const Token& at = peek();
            if (at.kind == TK::Op && (at.value == "==" || at.value == "!=" || at.value == "<" || at.value == "<=" ||
                                      at.value == ">" || at.value == ">=")) {
                std::string op = next().value;
                e = binary(at, op, std::move(e), parse_math1());
            } else if (is_name("in")) {
                next();
                e = binary(at, "in", std::move(e), parse_math1());
            } else if (is_name("not") && is_name("in", 1)) {
                next();
                next();
                e = binary(at, "not in", std::move(e), parse_math1());
            } else {
                return e;
            }
        }
    }
    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token& at = peek();
            std::string op = next().value;
            e = binary(at, op, std::move(e), parse_concat());
        }
        return e;
    }
    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (is_op("~")) {
            const Token& at = next();
            e = binary(at, "~", std::move(e), parse_math2());
        }
        return e;
    }
    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& at = peek();
            std::string op = next().value;
            e = binary(at, op, std::move(e), parse_pow());
        }
        return e;
    }
    ExprPtr parse_pow() {
        ExprPtr e = parse_unary(true);
        while (is_op("**")) {
            const Token& at = next();
            e = binary(at, "**", std::move(e), parse_unary(true));
        }
        return e;
    }
    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            e = make(Expr::Kind::Unary, peek());
            e->name = next().value;
            e->args.push_back(parse_unary(false));
        } else {
            e = parse_postfix(parse_primary());
        }
        if (with_filter) return parse_filter_chain(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = peek();
        switch (t.kind) {
            case TK::Name: {
                next();
                ExprPtr e = make(Expr::Kind::Literal, t);
                if (t.value == "true" || t.value == "True") e->value = Value::boolean(true);
                else if (t.value == "false" || t.value == "False") e->value = Value::boolean(false);
                else if (t.value == "none" || t.value == "None") e->value = Value::none();
                else {
                    e->kind = Expr::Kind::Name;
                    e->name = t.value;
                }
                return e;
            }
            case TK::String: {
                ExprPtr e = make(Expr::Kind::Literal, t);
                std::string s;
                while (peek().kind == TK::String) s += next().value;  // adjacent literals concatenate
                e->value = Value::string(std::move(s));
                return e;
            }
            case TK::Int: {
                ExprPtr e = make(Expr::Kind::Literal, next());
                e->value = Value::integer(std::strtoll(t.value.c_str(), nullptr, 10));
                return e;
            }
            case TK::Float: {
                ExprPtr e = make(Expr::Kind::Literal, next());
                e->value = Value::number(std::strtod(t.value.c_str(), nullptr));
                return e;
            }
            default: break;
        }
        if (is_op("(")) {
            next();
            if (is_op(")")) {  // empty tuple
                next();
                ExprPtr empty = make(Expr::Kind::ListLit, t);
                empty->name = "tuple";
                return empty;
            }
            ExprPtr e = parse_expr();
            if (is_op(",")) {
                ExprPtr list = make(Expr::Kind::ListLit, t);
                list->name = "tuple";
                list->args.push_back(std::move(e));
                while (is_op(",")) {
                    next();
                    if (is_op(")")) break;
                    list->args.push_back(parse_expr());
                }
                e = std::move(list);
            }
            expect_op(")");
            return e;
        }
        if (is_op("[")) {
            next();
            ExprPtr list = make(Expr::Kind::ListLit, t);
            while (!is_op("]")) {
                list->args.push_back(parse_expr());
                if (!is_op(",")) break;
                next();
            }
            expect_op("]");
            return list;
        }
        if (is_op("{")) {
            next();
            ExprPtr dict = make(Expr::Kind::DictLit, t);
            while (!is_op("}")) {
                dict->args.push_back(parse_expr());
                expect_op(":");
                dict->args.push_back(parse_expr());
                if (!is_op(",")) break;
                next();
            }
            expect_op("}");
            return dict;
        }
        error(t, "expected an expression, found " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            const Token& at = peek();
            if (is_op(".")) {
                next();
                ExprPtr g = make(Expr::Kind::GetAttr, at);
                if (peek().kind == TK::Int) {  // foo.0 is foo[0]
                    g->kind = Expr::Kind::GetItem;
                    ExprPtr idx = make(Expr::Kind::Literal, peek());
                    idx->value = Value::integer(std::strtoll(next().value.c_str(), nullptr, 10));
                    g->args.push_back(std::move(e));
                    g->args.push_back(std::move(idx));
                } else {
                    g->name = expect_name();
                    g->args.push_back(std::move(e));
                }
                e = std::move(g);
            } else if (is_op("[")) {
                next();
                e = parse_subscript(at, std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(const Token& at, ExprPtr obj) {
        ExprPtr parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
            if (!is_op(":") && !is_op("]")) parts[k] = parse_expr();
            if (k < 2 && is_op(":")) {
                next();
                slice = true;
                continue;
            }
            break;
        }
        expect_op("]");
        ExprPtr e = make(slice ? Expr::Kind::Slice : Expr::Kind::GetItem, at);
        e->args.push_back(std::move(obj));
        if (!slice && !parts[0]) error(at, "empty subscript");
        for (int k = 0; k < (slice ? 3 : 1); ++k) e->args.push_back(std::move(parts[k]));
        return e;
    }

    // Call arguments after the callee (which becomes args[0]).
    void parse_args(Expr& e) {
        expect_op("(");
        while (!is_op(")")) {
            if (peek().kind == TK::Name && is_op("=", 1)) {
                std::string key = next().value;
                next();
                e.kwargs.emplace_back(key, parse_expr());
            } else {
                if (!e.kwargs.empty()) error(peek(), "positional argument after a keyword argument");
                e.args.push_back(parse_expr());
            }
            if (!is_op(",")) break;
            next();
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr callee) {
        ExprPtr e = make(Expr::Kind::Call, peek());
        e->args.push_back(std::move(callee));
        parse_args(*e);
        return e;
    }

    ExprPtr parse_filter(ExprPtr subject) {
        const Token& at = peek();
        ExprPtr e = make(Expr::Kind::Filter, at);
        e->name = expect_name();
        e->args.push_back(std::move(subject));
        if (is_op("(")) parse_args(*e);
        return e;
    }

    ExprPtr parse_filter_chain(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                next();
                e = parse_filter(std::move(e));
            } else if (is_name("is")) {
                const Token& at = next();
                ExprPtr t = make(Expr::Kind::Test, at);
                if (is_name("not")) {
                    next();
                    t->negated = true;
                }
                t->name = expect_name();
                t->args.push_back(std::move(e));
                const Token& n = peek();
                if (is_op("(")) {
                    parse_args(*t);
                } else if ((n.kind == TK::Name || n.kind == TK::String || n.kind == TK::Int || n.kind == TK::Float ||
                            is_op("[") || is_op("{")) &&
                           !is_name("else") && !is_name("or") && !is_name("and")) {
                    t->args.push_back(parse_postfix(parse_primary()));  // "is equalto 5", "is sameas false"
                }
                e = std::move(t);
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(lex(source)).parse_all(); }

}  // namespace bee::chat::jinja
