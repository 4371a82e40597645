// chat/jinja_eval: the statement and expression walker (see jinja_eval.h).
#include "chat/jinja_eval.h"

#include "base/error.h"

namespace bee::chat::jinja {

Value* Scope::lookup(const std::string& name) {
    for (Scope* s = this; s; s = s->parent) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
}

Renderer::Renderer(const Body& body, const Value& globals, int64_t now_unix) : body_(body) {
    add_globals(root_, now_unix);
    if (globals.is_dict())
        for (const auto& kv : globals.dict->items) root_.vars[kv.first] = kv.second;
}

std::string Renderer::render() {
    std::string out;
    try {
        Flow flow = exec_body(body_, root_, out);
        if (flow != Flow::Normal) fail("chat template: {%% break %%} or {%% continue %%} outside a for loop");
    } catch (const Error& e) {
        std::string what = e.what();
        if (line_ > 0) fail("%s (at template line %d:%d)", what.c_str(), line_, col_);
        throw;
    }
    return out;
}

Renderer::Flow Renderer::exec_body(const Body& body, Scope& scope, std::string& out) {
    for (const StmtPtr& s : body) {
        Flow flow = exec(*s, scope, out);
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

Renderer::Flow Renderer::exec(const Stmt& s, Scope& scope, std::string& out) {
    step();
    line_ = s.line;
    col_ = s.col;
    switch (s.kind) {
        case Stmt::Kind::Text: out += s.text; break;
        case Stmt::Kind::Output: out += to_str(eval(*s.expr, scope)); break;
        case Stmt::Kind::If:
            for (const auto& branch : s.branches)
                if (!branch.first || eval(*branch.first, scope).truthy()) return exec_body(branch.second, scope, out);
            break;
        case Stmt::Kind::For: exec_for(s, scope, out); break;
        case Stmt::Kind::Set: exec_set(s, scope); break;
        case Stmt::Kind::SetBlock: {
            std::string captured;
            Flow flow = exec_body(s.body, scope, captured);
            if (flow != Flow::Normal) return flow;
            scope.vars[s.targets[0]] = Value::string(std::move(captured));
            break;
        }
        case Stmt::Kind::Macro: scope.vars[s.text] = make_macro(s); break;
        case Stmt::Kind::CallBlock: {
            // caller() renders the block body in the scope of the {% call %}.
            const Stmt* stmt = &s;
            Scope* where = &scope;
            Value caller = Value::function([this, stmt, where](Args&) {
                std::string text;
                exec_body(stmt->body, *where, text);
                return Value::string(std::move(text));
            });
            const Expr& call = *s.expr;
            Value callee = eval(*call.args[0], scope);
            Args args = eval_args(call, scope, 1);
            args.kw.emplace_back("caller", caller);
            if (!callee.is_function()) fail("chat template: {%% call %%} target is not a macro");
            out += to_str((*callee.fn)(args));
            break;
        }
        case Stmt::Kind::FilterBlock: {
            std::string captured;
            Flow flow = exec_body(s.body, scope, captured);
            if (flow != Flow::Normal) return flow;
            Args args = eval_args(*s.expr, scope, 1);
            out += to_str(apply_filter(s.expr->name, Value::string(std::move(captured)), args));
            break;
        }
        case Stmt::Kind::Break: return Flow::Break;
        case Stmt::Kind::Continue: return Flow::Continue;
    }
    if (out.size() > kMaxOutputBytes) fail("chat template: output larger than %zu bytes", kMaxOutputBytes);
    return Flow::Normal;
}

void Renderer::exec_for(const Stmt& s, Scope& scope, std::string& out) {
    Value iterable = eval(*s.expr, scope);
    if (iterable.is_none() || iterable.is_number() || iterable.is_function())
        fail("chat template: cannot iterate over a %s", iterable.type_name());
    std::vector<Value> items = iterate(iterable);
    Scope inner;
    inner.parent = &scope;
    auto bind = [&](const Value& item) {
        if (s.targets.size() == 1) {
            inner.vars[s.targets[0]] = item;
            return;
        }
        std::vector<Value> parts = iterate(item);
        if (parts.size() != s.targets.size())
            fail("chat template: cannot unpack %zu values into %zu loop variables", parts.size(), s.targets.size());
        for (size_t k = 0; k < parts.size(); ++k) inner.vars[s.targets[k]] = parts[k];
    };
    if (s.cond) {  // "for x in xs if cond": filter first, so loop.length counts what is left
        std::vector<Value> kept;
        for (const Value& item : items) {
            step();
            bind(item);
            if (eval(*s.cond, inner).truthy()) kept.push_back(item);
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        exec_body(s.else_body, scope, out);
        return;
    }
    // note: one loop object per loop, updated in place each iteration (building a fresh dict per
    // iteration dominated the cost of tight loops).
    const int64_t n = int64_t(items.size());
    auto index = std::make_shared<int64_t>(0);
    Value loop = Value::new_dict();
    Dict& d = *loop.dict;
    for (const char* key : {"index", "index0", "revindex", "revindex0", "first", "last", "previtem", "nextitem"})
        d.set(key, Value::none());
    d.set("length", Value::integer(n));
    d.set("depth", Value::integer(1));
    d.set("depth0", Value::integer(0));
    d.set("cycle", Value::function([index](Args& a) {
              if (a.pos.empty()) fail("chat template: loop.cycle() needs at least one argument");
              return a.pos[size_t(*index) % a.pos.size()];
          }));
    inner.vars["loop"] = loop;
    for (int64_t k = 0; k < n; ++k) {
        step();
        *index = k;
        d.items[0].second = Value::integer(k + 1);
        d.items[1].second = Value::integer(k);
        d.items[2].second = Value::integer(n - k);
        d.items[3].second = Value::integer(n - k - 1);
        d.items[4].second = Value::boolean(k == 0);
        d.items[5].second = Value::boolean(k == n - 1);
        d.items[6].second = k > 0 ? items[size_t(k - 1)] : Value::undefined("loop.previtem");
        d.items[7].second = k + 1 < n ? items[size_t(k + 1)] : Value::undefined("loop.nextitem");
        bind(items[size_t(k)]);
        Flow flow = exec_body(s.body, inner, out);
        if (flow == Flow::Break) break;
    }
}

void Renderer::exec_set(const Stmt& s, Scope& scope) {
    Value v = eval(*s.expr, scope);
    if (!s.text.empty()) {  // set ns.attr = v
        Value* target = scope.lookup(s.targets[0]);
        if (!target || !target->is_namespace)
            fail("chat template: cannot assign attribute '%s' of '%s': only namespace() objects take attributes",
                 s.text.c_str(), s.targets[0].c_str());
        target->dict->set(s.text, std::move(v));
        return;
    }
    if (s.targets.size() == 1) {
        scope.vars[s.targets[0]] = std::move(v);
        return;
    }
    std::vector<Value> parts = iterate(v);
    if (parts.size() != s.targets.size())
        fail("chat template: cannot unpack %zu values into %zu names", parts.size(), s.targets.size());
    for (size_t k = 0; k < parts.size(); ++k) scope.vars[s.targets[k]] = parts[k];
}

// A macro sees the template's top-level variables and its own arguments (varargs, kwargs, caller).
Value Renderer::make_macro(const Stmt& s) {
    const Stmt* stmt = &s;
    return Value::function([this, stmt](Args& args) {
        if (call_depth_ >= kMaxCallDepth) fail("chat template: macro calls nested deeper than %d", kMaxCallDepth);
        Scope local;
        local.parent = &root_;
        std::vector<Value> varargs;
        for (size_t k = 0; k < args.pos.size(); ++k) {
            if (k < stmt->params.size()) local.vars[stmt->params[k].first] = args.pos[k];
            else varargs.push_back(args.pos[k]);
        }
        Value kwargs = Value::new_dict();
        for (auto& kv : args.kw) {
            bool is_param = kv.first == "caller";
            for (const auto& p : stmt->params) is_param = is_param || p.first == kv.first;
            if (is_param) local.vars[kv.first] = kv.second;
            else kwargs.dict->set(kv.first, kv.second);
        }
        for (const auto& p : stmt->params)
            if (!local.vars.count(p.first))
                local.vars[p.first] = p.second ? eval(*p.second, local) : Value::undefined(p.first);
        local.vars["varargs"] = Value::new_list(std::move(varargs));
        local.vars["kwargs"] = kwargs;
        std::string text;
        ++call_depth_;
        try {
            exec_body(stmt->body, local, text);
        } catch (...) {
            --call_depth_;
            throw;
        }
        --call_depth_;
        return Value::string(std::move(text));
    });
}

Args Renderer::eval_args(const Expr& e, Scope& scope, size_t first) {
    Args args;
    for (size_t k = first; k < e.args.size(); ++k) args.pos.push_back(eval(*e.args[k], scope));
    for (const auto& kv : e.kwargs) args.kw.emplace_back(kv.first, eval(*kv.second, scope));
    return args;
}

Value Renderer::eval(const Expr& e, Scope& scope) {
    line_ = e.line;
    col_ = e.col;
    switch (e.kind) {
        case Expr::Kind::Literal: return e.value;
        case Expr::Kind::Name: {
            Value* v = scope.lookup(e.name);
            return v ? *v : Value::undefined(e.name);
        }
        case Expr::Kind::GetAttr: return get_attr(eval(*e.args[0], scope), e.name);
        case Expr::Kind::GetItem: return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope));
        case Expr::Kind::Slice: {
            Value obj = eval(*e.args[0], scope);
            Value bounds[3];
            for (int k = 0; k < 3; ++k)
                bounds[k] = e.args[size_t(k) + 1] ? eval(*e.args[size_t(k) + 1], scope) : Value::none();
            return slice(obj, bounds[0], bounds[1], bounds[2]);
        }
        case Expr::Kind::Call: {
            Value callee = eval(*e.args[0], scope);
            Args args = eval_args(e, scope, 1);
            if (callee.is_undefined()) fail("chat template: '%s' is undefined and cannot be called", callee.s.c_str());
            if (!callee.is_function()) fail("chat template: a %s is not callable", callee.type_name());
            step();
            return (*callee.fn)(args);
        }
        case Expr::Kind::Filter: {
            Value subject = eval(*e.args[0], scope);
            Args args = eval_args(e, scope, 1);
            return apply_filter(e.name, subject, args);
        }
        case Expr::Kind::Test: {
            Value subject = eval(*e.args[0], scope);
            Args args = eval_args(e, scope, 1);
            return Value::boolean(apply_test(e.name, subject, args) != e.negated);
        }
        case Expr::Kind::Unary: {
            Value v = eval(*e.args[0], scope);
            if (e.name == "not") return Value::boolean(!v.truthy());
            if (v.kind == Value::Kind::Int) return Value::integer(e.name == "-" ? -v.i : v.i);
            if (!v.is_number()) fail("chat template: bad operand type for unary %s: %s", e.name.c_str(), v.type_name());
            return Value::number(e.name == "-" ? -v.as_double() : v.as_double());
        }
        case Expr::Kind::Binary: return eval_binary(e, scope);
        case Expr::Kind::Cond:
            if (eval(*e.args[1], scope).truthy()) return eval(*e.args[0], scope);
            return e.args[2] ? eval(*e.args[2], scope) : Value::undefined();
        case Expr::Kind::ListLit: {
            Value list = Value::new_list();
            list.is_tuple = e.name == "tuple";
            for (const ExprPtr& a : e.args) list.list->push_back(eval(*a, scope));
            return list;
        }
        case Expr::Kind::DictLit: {
            Value dict = Value::new_dict();
            for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
                Value key = eval(*e.args[k], scope);
                if (!key.is_string()) fail("chat template: dict keys must be strings, got %s", key.type_name());
                dict.dict->set(key.s, eval(*e.args[k + 1], scope));
            }
            return dict;
        }
    }
    return Value::undefined();
}

Value Renderer::eval_binary(const Expr& e, Scope& scope) {
    const std::string& op = e.name;
    Value a = eval(*e.args[0], scope);
    if (op == "and") return a.truthy() ? eval(*e.args[1], scope) : a;
    if (op == "or") return a.truthy() ? a : eval(*e.args[1], scope);
    Value b = eval(*e.args[1], scope);
    line_ = e.line;
    col_ = e.col;
    if (op == "in") return Value::boolean(contains(b, a));
    if (op == "not in") return Value::boolean(!contains(b, a));
    return binary_op(op, a, b);
}

}  // namespace bee::chat::jinja
