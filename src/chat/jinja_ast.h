// chat/jinja_ast: the parsed form of a template: expressions and statements, built by jinja_parser
// and walked by jinja_eval.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace bee::chat::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,  // value
        Name,     // name
        GetAttr,  // args[0].name
        GetItem,  // args[0][args[1]]
        Slice,    // args[0][args[1]:args[2]:args[3]] (null children are omitted bounds)
        Call,     // args[0](args[1..], kwargs)
        Filter,   // args[0] | name(args[1..], kwargs)
        Test,     // args[0] is [not] name(args[1..])
        Unary,    // name in {"-", "+", "not"}: name args[0]
        Binary,   // args[0] name args[1]: arithmetic, comparison, "in", "not in", "~", "and", "or"
        Cond,     // args[0] if args[1] else args[2] (args[2] may be null)
        ListLit,  // [args...]; name == "tuple" for (a, b) and a, b
        DictLit,  // {kwargs...}; keys are expressions in args (pairs: key, value)
    };
    Kind kind;
    int line = 0, col = 0;
    std::string name;
    Value value;
    bool negated = false;  // "is not"
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    enum class Kind {
        Text,         // text
        Output,       // {{ expr }}
        If,           // branches: (cond, body)...; a null cond is the else branch
        For,          // for targets in expr [if cond] body [else else_body]
        Set,          // set targets = expr, or set target.attr = expr (attr non-empty)
        SetBlock,     // {% set target %}body{% endset %}
        Macro,        // macro name(params) body
        CallBlock,    // {% call macro(args) %}body{% endcall %}: body is caller()
        FilterBlock,  // {% filter name(args) %}body{% endfilter %}: expr is a Filter over a placeholder
        Break,
        Continue,
    };
    Kind kind;
    int line = 0, col = 0;
    std::string text;  // Text; Macro name; Set attribute
    ExprPtr expr;      // Output, For iterable, Set value, CallBlock call, FilterBlock filter
    ExprPtr cond;      // For filter condition
    std::vector<std::string> targets;
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body, else_body;
    std::vector<std::pair<std::string, ExprPtr>> params;  // Macro parameters and defaults (null: none)
};

// Parses template source; throws bee::Error "chat template: <line>:<col>: ..." on syntax errors.
Body parse_template(std::string_view source);

}  // namespace bee::chat::jinja
