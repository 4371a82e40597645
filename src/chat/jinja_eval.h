// chat/jinja_eval: renders a parsed template. Scoping follows jinja2 (a for loop and a macro open a
// scope; if does not), and every loop, call and output is bounded so no template can run away.
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace bee::chat::jinja {

// Hard limits: a template that goes past one fails with a bee::Error instead of hanging or eating memory
// (the total work and string bytes of a render are bounded by RenderScope, jinja_value.h).
constexpr size_t kMaxOutputBytes = 64u << 20;  // rendered text, and any string built on the way
constexpr int kMaxCallDepth = 64;              // nested macro calls
constexpr int64_t kMaxRange = 1'000'000;       // elements range() may produce

struct Scope {
    std::unordered_map<std::string, Value> vars;
    Scope* parent = nullptr;
    Value* lookup(const std::string& name);
};

class Renderer {
public:
    // `globals`: a dict Value whose entries become the template's top-level variables; `now_unix`:
    // the time strftime_now() formats (UTC).
    Renderer(const Body& body, const Value& globals, int64_t now_unix);
    std::string render();

    // Counts one statement or loop iteration against the render's work budget.
    void step() { RenderScope::charge(1); }

private:
    enum class Flow { Normal, Break, Continue };

    const Body& body_;
    Scope root_;
    int call_depth_ = 0;
    int line_ = 0, col_ = 0;  // the expression or statement being evaluated, for error messages

    Flow exec_body(const Body& body, Scope& scope, std::string& out);
    Flow exec(const Stmt& s, Scope& scope, std::string& out);
    void exec_for(const Stmt& s, Scope& scope, std::string& out);
    void exec_set(const Stmt& s, Scope& scope);
    Value make_macro(const Stmt& s);

    Value eval(const Expr& e, Scope& scope);
    Value eval_binary(const Expr& e, Scope& scope);
    Args eval_args(const Expr& e, Scope& scope, size_t first);
};

// Python-style arithmetic and operators on values (jinja_ops.cpp).
Value binary_op(const std::string& op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
std::vector<Value> iterate(const Value& v);  // the items a for loop sees (dict: keys)
std::vector<std::string> utf8_chars(const std::string& s);

// Attributes and methods of values, and global functions (jinja_methods.cpp).
Value get_attr(const Value& obj, const std::string& name);
void add_globals(Scope& root, int64_t now_unix);  // range, namespace, dict, raise_exception, strftime_now

// Filters and tests (jinja_filters.cpp). Unknown names throw bee::Error.
Value apply_filter(const std::string& name, const Value& subject, const Args& args);
bool apply_test(const std::string& name, const Value& subject, const Args& args);

}  // namespace bee::chat::jinja
