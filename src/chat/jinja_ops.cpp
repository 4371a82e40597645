// chat/jinja_ops: Python operator semantics for interpreter values: arithmetic, `in`, subscripts,
// slices (by code point for strings) and iteration.
#include <algorithm>
#include <cmath>
#include <optional>

#include "base/error.h"
#include "chat/jinja_eval.h"

namespace bee::chat::jinja {

std::vector<std::string> utf8_chars(const std::string& s) {
    std::vector<std::string> out;
    for (size_t k = 0; k < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[k]);
        size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
        len = std::min(len, s.size() - k);
        out.push_back(s.substr(k, len));
        k += len;
    }
    return out;
}

std::vector<Value> iterate(const Value& v) {
    if (v.is_list()) RenderScope::charge(int64_t(v.list->size()));
    if (v.is_dict()) RenderScope::charge(int64_t(v.dict->items.size()));
    if (v.is_string()) RenderScope::charge(int64_t(v.s.size()));
    switch (v.kind) {
        case Value::Kind::Undefined: return {};
        case Value::Kind::List: return *v.list;
        case Value::Kind::Dict: {
            std::vector<Value> keys;
            for (const auto& kv : v.dict->items) keys.push_back(Value::string(kv.first));
            return keys;
        }
        case Value::Kind::String: {
            std::vector<Value> chars;
            for (std::string& c : utf8_chars(v.s)) chars.push_back(Value::string(std::move(c)));
            return chars;
        }
        default: fail("chat template: a %s is not iterable", v.type_name());
    }
}

static Value repeat(const Value& seq, int64_t times) {
    if (times < 0) times = 0;
    size_t unit = seq.is_string() ? seq.s.size() : seq.list->size();
    if (unit * size_t(times) > kMaxOutputBytes) fail("chat template: repetition result too large");
    if (seq.is_string()) {
        std::string out;
        for (int64_t k = 0; k < times; ++k) out += seq.s;
        return Value::string(std::move(out));
    }
    Value out = Value::new_list();
    for (int64_t k = 0; k < times; ++k) out.list->insert(out.list->end(), seq.list->begin(), seq.list->end());
    return out;
}

static Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    const bool ints = a.kind != Value::Kind::Float && b.kind != Value::Kind::Float;
    auto ival = [](const Value& v) { return v.kind == Value::Kind::Bool ? int64_t(v.b) : v.i; };
    const double x = a.as_double(), y = b.as_double();
    if (op == "/") {
        if (y == 0) fail("chat template: division by zero");
        return Value::number(x / y);
    }
    if (op == "//" || op == "%") {
        if (y == 0) fail("chat template: integer division or modulo by zero");
        if (ints) {
            int64_t p = ival(a), q = ival(b);
            int64_t div = p / q, mod = p % q;
            if (mod != 0 && ((mod < 0) != (q < 0))) {  // Python floors toward negative infinity
                --div;
                mod += q;
            }
            return Value::integer(op == "//" ? div : mod);
        }
        double div = std::floor(x / y);
        return Value::number(op == "//" ? div : x - div * y);
    }
    if (op == "**") {
        if (ints && ival(b) >= 0) return Value::integer(int64_t(std::pow(x, y)));
        return Value::number(std::pow(x, y));
    }
    if (ints) {
        int64_t p = ival(a), q = ival(b), r = 0;
        bool overflow = op == "+"   ? __builtin_add_overflow(p, q, &r)
                        : op == "-" ? __builtin_sub_overflow(p, q, &r)
                                    : __builtin_mul_overflow(p, q, &r);
        if (overflow) fail("chat template: integer overflow in %s", op.c_str());
        return Value::integer(r);
    }
    return Value::number(op == "+" ? x + y : op == "-" ? x - y : x * y);
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return Value::boolean(values_equal(a, b));
    if (op == "!=") return Value::boolean(!values_equal(a, b));
    if (op == "<") return Value::boolean(compare_values(a, b) < 0);
    if (op == "<=") return Value::boolean(compare_values(a, b) <= 0);
    if (op == ">") return Value::boolean(compare_values(a, b) > 0);
    if (op == ">=") return Value::boolean(compare_values(a, b) >= 0);
    if (op == "~") {
        std::string s = to_str(a) + to_str(b);
        if (s.size() > kMaxOutputBytes) fail("chat template: string too large");
        return Value::string(std::move(s));
    }
    // note: as llama.cpp's Jinja (not jinja2), a string plus an undefined variable is the string: templates
    // such as firefunction-v2's add variables the caller never sets ('... + functions'). A string plus none
    // still fails, as in jinja2 (chat::apply retries null message contents as "").
    if (op == "+" && ((a.is_string() && b.is_undefined()) || (a.is_undefined() && b.is_string())))
        return a.is_string() ? a : b;
    if (op == "+" && a.is_string() && b.is_string()) {
        if (a.s.size() + b.s.size() > kMaxOutputBytes) fail("chat template: string too large");
        if (!a.is_safe && !b.is_safe) return Value::string(a.s + b.s);
        // jinja2 Markup: adding a plain string to a |safe one escapes the plain one.
        Value out = Value::string((a.is_safe ? a.s : html_escape(a.s)) + (b.is_safe ? b.s : html_escape(b.s)));
        out.is_safe = true;
        return out;
    }
    if (op == "+" && a.is_list() && b.is_list()) {
        Value out = Value::new_list(*a.list);
        out.list->insert(out.list->end(), b.list->begin(), b.list->end());
        return out;
    }
    if (op == "*" && (a.is_string() || a.is_list()) && b.kind == Value::Kind::Int) return repeat(a, b.i);
    if (op == "*" && (b.is_string() || b.is_list()) && a.kind == Value::Kind::Int) return repeat(b, a.i);
    if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
    if (a.is_undefined() || b.is_undefined())
        fail("chat template: '%s' is undefined (used with operator %s)", (a.is_undefined() ? a : b).s.c_str(),
             op.c_str());
    fail("chat template: unsupported operand types for %s: %s and %s", op.c_str(), a.type_name(), b.type_name());
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind) {
        case Value::Kind::Undefined: return false;
        case Value::Kind::String:
            if (!item.is_string())
                fail("chat template: 'in <string>' needs a string on the left, got %s", item.type_name());
            return container.s.find(item.s) != std::string::npos;
        case Value::Kind::List:
            for (const Value& v : *container.list)
                if (values_equal(v, item)) return true;
            return false;
        case Value::Kind::Dict: return item.is_string() && container.dict->find(item.s) != nullptr;
        default: fail("chat template: a %s cannot be searched with 'in'", container.type_name());
    }
}

Value get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) fail("chat template: '%s' is undefined (cannot index it)", obj.s.c_str());
    if (obj.is_dict()) {
        if (key.is_string()) {
            if (const Value* v = obj.dict->find(key.s)) return *v;
            return get_attr(obj, key.s);  // jinja2 falls back to attributes (d['items'] is the method)
        }
        return Value::undefined();
    }
    if ((obj.is_list() || obj.is_string()) && (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool)) {
        int64_t idx = key.kind == Value::Kind::Bool ? int64_t(key.b) : key.i;
        if (obj.is_list()) {
            int64_t n = int64_t(obj.list->size());
            if (idx < 0) idx += n;
            if (idx < 0 || idx >= n) return Value::undefined("list index");
            return (*obj.list)[size_t(idx)];
        }
        std::vector<std::string> chars = utf8_chars(obj.s);
        int64_t n = int64_t(chars.size());
        if (idx < 0) idx += n;
        if (idx < 0 || idx >= n) return Value::undefined("string index");
        return Value::string(chars[size_t(idx)]);
    }
    if (key.is_string()) return get_attr(obj, key.s);
    return Value::undefined();
}

// Python slice semantics: negative bounds count from the end, bounds are clamped, step may be negative.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
    auto bound = [](const Value& v, const char* what) -> std::optional<int64_t> {
        if (v.is_none() || v.is_undefined()) return std::nullopt;
        if (v.kind != Value::Kind::Int) fail("chat template: slice %s must be an integer", what);
        return v.i;
    };
    const int64_t st = bound(step, "step").value_or(1);
    if (st == 0) fail("chat template: slice step cannot be zero");
    std::vector<Value> items;
    if (obj.is_list()) items = *obj.list;
    else if (obj.is_string()) items = iterate(obj);
    else fail("chat template: a %s cannot be sliced", obj.type_name());
    const int64_t n = int64_t(items.size());
    auto clamp = [&](std::optional<int64_t> b, int64_t dflt) {
        if (!b) return dflt;
        int64_t v = *b < 0 ? *b + n : *b;
        if (st > 0) return std::clamp<int64_t>(v, 0, n);
        return std::clamp<int64_t>(v, -1, n - 1);
    };
    const int64_t from = clamp(bound(start, "start"), st > 0 ? 0 : n - 1);
    const int64_t to = clamp(bound(stop, "stop"), st > 0 ? n : -1);
    std::vector<Value> picked;
    for (int64_t k = from; st > 0 ? k < to : k > to; k += st) picked.push_back(items[size_t(k)]);
    if (obj.is_list()) return Value::new_list(std::move(picked));
    std::string out;
    for (const Value& c : picked) out += c.s;
    return Value::string(std::move(out));
}

}  // namespace bee::chat::jinja
