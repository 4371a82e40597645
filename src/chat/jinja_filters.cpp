// chat/jinja_filters: the jinja2 filters and tests chat templates use, with jinja2's argument names and
// defaults (tojson follows Hugging Face's override: keys unsorted, no HTML escaping).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "chat/jinja_eval.h"

namespace bee::chat::jinja {
namespace {

std::string as_text(const Value& v) { return to_str(v); }

std::string case_map(std::string s, bool upper) {
    for (char& c : s)
        c = char(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Attribute path lookup used by map/selectattr/sort/join ("a.b" walks nested dicts).
Value attribute_of(const Value& item, const std::string& path) {
    Value cur = item;
    size_t start = 0;
    while (start <= path.size()) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (cur.is_undefined()) return cur;
        cur = get_item(cur, Value::string(part));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return cur;
}

std::string required_string(const Args& a, size_t idx, const char* name, const char* filter) {
    Value v = a.get(idx, name);
    if (!v.is_string()) fail("chat template: filter %s needs a string argument '%s'", filter, name);
    return v.s;
}

// Tests for select/reject/selectattr/rejectattr: args[first] is the test name, the rest its arguments.
bool run_test_from(const Args& a, size_t first, const Value& subject) {
    if (a.pos.size() <= first) return subject.truthy();
    if (!a.pos[first].is_string()) fail("chat template: the test name must be a string");
    Args rest;
    rest.pos.assign(a.pos.begin() + long(first) + 1, a.pos.end());
    return apply_test(a.pos[first].s, subject, rest);
}

// note: like jinja2, select/reject/map over a falsy value (none, "", []) give an empty list.
Value select_items(const Value& subject, const Args& a, bool by_attr, bool keep) {
    Value out = Value::new_list();
    if (!subject.truthy()) return out;
    std::string attr = by_attr ? required_string(a, 0, "attribute", "selectattr") : "";
    for (const Value& item : iterate(subject)) {
        Value probe = by_attr ? attribute_of(item, attr) : item;
        if (run_test_from(a, by_attr ? 1 : 0, probe) == keep) out.list->push_back(item);
    }
    return out;
}

Value map_items(const Value& subject, const Args& a) {
    Value out = Value::new_list();
    if (!subject.truthy()) return out;
    Value attr = a.get(size_t(-1), "attribute");
    if (attr.is_string()) {
        Value dflt = a.get(size_t(-1), "default");
        for (const Value& item : iterate(subject)) {
            Value v = attribute_of(item, attr.s);
            out.list->push_back(v.is_undefined() && !dflt.is_undefined() ? dflt : v);
        }
        return out;
    }
    if (a.pos.empty() || !a.pos[0].is_string()) fail("chat template: map() needs a filter name or attribute=");
    Args rest;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    for (const Value& item : iterate(subject)) out.list->push_back(apply_filter(a.pos[0].s, item, rest));
    return out;
}

Value sort_items(const Value& subject, const Args& a) {
    std::vector<Value> items = iterate(subject);
    const bool reverse = a.get(0, "reverse").truthy();
    const bool case_sensitive = a.get(1, "case_sensitive").truthy();
    Value attr = a.get(2, "attribute");
    auto key = [&](const Value& v) {
        Value k = attr.is_string() ? attribute_of(v, attr.s) : v;
        if (k.is_string() && !case_sensitive) k.s = case_map(k.s, false);
        return k;
    };
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        int c = compare_values(key(x), key(y));
        return reverse ? c > 0 : c < 0;
    });
    return Value::new_list(std::move(items));
}

Value int_filter(const Value& v, const Args& a) {
    Value dflt = a.get(0, "default", Value::integer(0));
    switch (v.kind) {
        case Value::Kind::Int: return v;
        case Value::Kind::Bool: return Value::integer(v.b);
        case Value::Kind::Float: return std::isfinite(v.f) ? Value::integer(int64_t(v.f)) : dflt;
        case Value::Kind::String: {
            std::string s = v.s;
            char* end = nullptr;
            long long x = std::strtoll(s.c_str(), &end, 10);
            while (end && std::isspace(static_cast<unsigned char>(*end))) ++end;
            if (end && *end == 0 && !s.empty()) return Value::integer(x);
            double d = std::strtod(s.c_str(), &end);
            if (end && *end == 0 && !s.empty() && std::isfinite(d)) return Value::integer(int64_t(d));
            return dflt;
        }
        default: return dflt;
    }
}

Value indent_filter(const Value& v, const Args& a) {
    Value width = a.get(0, "width", Value::integer(4));
    std::string pad = width.is_string() ? width.s : std::string(size_t(std::clamp<int64_t>(width.i, 0, 1024)), ' ');
    const bool first = a.get(1, "first").truthy(), blank = a.get(2, "blank").truthy();
    std::string s = as_text(v), out;
    size_t start = 0;
    for (bool is_first = true; start <= s.size(); is_first = false) {
        size_t nl = s.find('\n', start);
        std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if ((!is_first || first) && (blank || !line.empty())) out += pad;
        out += line;
        if (nl == std::string::npos) break;
        out += '\n';
        start = nl + 1;
    }
    return Value::string(out);
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, const Args& a) {
    if (name == "default" || name == "d") {
        bool use_default = v.is_undefined() || (a.get(1, "boolean").truthy() && !v.truthy());
        return use_default ? a.get(0, "default_value", Value::string("")) : v;
    }
    if (name == "safe") {
        Value out = Value::string(as_text(v));
        out.is_safe = true;
        return out;
    }
    if (name == "string") return Value::string(as_text(v));
    if (name == "tojson") {  // transformers' signature: tojson(x, ensure_ascii, indent, separators, sort_keys)
        JsonStyle st;
        Value indent = a.get(size_t(-1), "indent", a.pos.size() == 1 ? a.pos[0] : Value::none());
        if (indent.kind == Value::Kind::Int) st.indent = int(std::clamp<int64_t>(indent.i, 0, 64));
        st.ensure_ascii = a.get(size_t(-1), "ensure_ascii").truthy();
        st.sort_keys = a.get(size_t(-1), "sort_keys").truthy();
        Value seps = a.get(size_t(-1), "separators");
        if (seps.is_list()) {
            if (seps.list->size() != 2 || !(*seps.list)[0].is_string() || !(*seps.list)[1].is_string())
                fail("chat template: tojson separators must be two strings");
            st.item_sep = (*seps.list)[0].s;
            st.key_sep = (*seps.list)[1].s;
        }
        return Value::string(to_json(v, st));
    }
    if (name == "length" || name == "count") {
        if (v.is_string()) return Value::integer(int64_t(utf8_chars(v.s).size()));
        if (v.is_dict()) return Value::integer(int64_t(v.dict->items.size()));
        if (v.is_list()) return Value::integer(int64_t(v.list->size()));
        if (v.is_undefined()) return Value::integer(0);
        fail("chat template: a %s has no length", v.type_name());
    }
    if (name == "trim") {
        Args args = a;
        return (*get_attr(Value::string(as_text(v)), "strip").fn)(args);
    }
    if (name == "upper" || name == "lower") return Value::string(case_map(as_text(v), name == "upper"));
    if (name == "capitalize" || name == "title") {
        Args none;
        return (*get_attr(Value::string(as_text(v)), name).fn)(none);
    }
    if (name == "replace") {
        Args args = a;
        return (*get_attr(Value::string(as_text(v)), "replace").fn)(args);
    }
    if (name == "join") {
        std::string sep = a.get(0, "d", Value::string("")).s;
        Value attr = a.get(1, "attribute");
        std::string out;
        bool first = true;
        for (const Value& item : iterate(v)) {
            out += (first ? "" : sep) + as_text(attr.is_string() ? attribute_of(item, attr.s) : item);
            first = false;
        }
        return Value::string(out);
    }
    if (name == "first" || name == "last") {
        std::vector<Value> items = iterate(v);
        if (items.empty()) return Value::undefined(name);
        return name == "first" ? items.front() : items.back();
    }
    if (name == "items") {
        if (v.is_undefined()) return Value::new_list();
        if (!v.is_dict()) fail("chat template: filter items needs a mapping, got %s", v.type_name());
        Args none;
        return (*get_attr(v, "items").fn)(none);
    }
    if (name == "list") return Value::new_list(iterate(v));
    if (name == "int") return int_filter(v, a);
    if (name == "float") {
        if (v.is_number()) return Value::number(v.as_double());
        if (v.is_string()) {
            char* end = nullptr;
            double d = std::strtod(v.s.c_str(), &end);
            if (end && *end == 0 && !v.s.empty()) return Value::number(d);
        }
        return a.get(0, "default", Value::number(0));
    }
    if (name == "abs") {
        if (v.kind == Value::Kind::Int) return Value::integer(v.i < 0 ? -v.i : v.i);
        return Value::number(std::fabs(v.as_double()));
    }
    if (name == "round") {
        double scale = std::pow(10.0, double(a.get(0, "precision", Value::integer(0)).as_double()));
        return Value::number(std::round(v.as_double() * scale) / scale);
    }
    if (name == "map") return map_items(v, a);
    if (name == "select" || name == "reject") return select_items(v, a, false, name == "select");
    if (name == "selectattr" || name == "rejectattr") return select_items(v, a, true, name == "selectattr");
    if (name == "attr") return get_attr(v, required_string(a, 0, "name", "attr"));
    if (name == "sort") return sort_items(v, a);
    if (name == "reverse") {
        std::vector<Value> items = iterate(v);
        std::reverse(items.begin(), items.end());
        if (v.is_string()) {
            std::string out;
            for (const Value& c : items) out += c.s;
            return Value::string(out);
        }
        return Value::new_list(std::move(items));
    }
    if (name == "unique") {
        Value out = Value::new_list();
        for (const Value& item : iterate(v))
            if (!contains(out, item)) out.list->push_back(item);
        return out;
    }
    if (name == "sum") {
        Value attr = a.get(0, "attribute");
        Value total = a.get(1, "start", Value::integer(0));
        for (const Value& item : iterate(v))
            total = binary_op("+", total, attr.is_string() ? attribute_of(item, attr.s) : item);
        return total;
    }
    if (name == "min" || name == "max") {
        std::vector<Value> items = iterate(v);
        if (items.empty()) return Value::undefined(name);
        Value best = items[0];
        for (const Value& item : items)
            if ((compare_values(item, best) < 0) == (name == "min") && !values_equal(item, best)) best = item;
        return best;
    }
    if (name == "dictsort") {
        if (!v.is_dict()) fail("chat template: dictsort needs a mapping");
        Args none;
        Value pairs = (*get_attr(v, "items").fn)(none);
        Args by_key;
        return sort_items(pairs, by_key);
    }
    if (name == "indent") return indent_filter(v, a);
    if (name == "wordcount") {
        Args none;
        return Value::integer(int64_t((*get_attr(Value::string(as_text(v)), "split").fn)(none).list->size()));
    }
    if (name == "escape" || name == "e") {
        if (v.is_safe) return v;
        Value out = Value::string(html_escape(as_text(v)));
        out.is_safe = true;
        return out;
    }
    fail("chat template: unknown filter '%s'", name.c_str());
}

bool apply_test(const std::string& name, const Value& v, const Args& a) {
    using K = Value::Kind;
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.kind == K::Bool;
    if (name == "true") return v.kind == K::Bool && v.b;
    if (name == "false") return v.kind == K::Bool && !v.b;
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.kind == K::Int;
    if (name == "float") return v.kind == K::Float;
    if (name == "mapping") return v.is_dict();
    if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string();
    if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
    if (name == "callable") return v.is_function();
    if (name == "lower") return v.is_string() && case_map(v.s, false) == v.s;
    if (name == "upper") return v.is_string() && case_map(v.s, true) == v.s;
    if (name == "odd" || name == "even") {
        if (v.kind != K::Int) fail("chat template: test %s needs an integer", name.c_str());
        return (v.i % 2 != 0) == (name == "odd");
    }
    const Value other = a.get(0, "other");
    if (name == "divisibleby") {
        if (v.kind != K::Int || other.kind != K::Int || other.i == 0)
            fail("chat template: divisibleby needs non-zero integers");
        return v.i % other.i == 0;
    }
    if (name == "equalto" || name == "eq" || name == "==") return values_equal(v, other);
    if (name == "ne" || name == "!=") return !values_equal(v, other);
    if (name == "lt" || name == "lessthan" || name == "<") return compare_values(v, other) < 0;
    if (name == "le" || name == "<=") return compare_values(v, other) <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return compare_values(v, other) > 0;
    if (name == "ge" || name == ">=") return compare_values(v, other) >= 0;
    if (name == "in") return contains(other, v);
    if (name == "sameas") {
        if (v.kind != other.kind) return false;
        switch (v.kind) {
            case K::None:
            case K::Undefined: return true;
            case K::Bool: return v.b == other.b;
            case K::Int: return v.i == other.i;
            case K::List: return v.list == other.list;
            case K::Dict: return v.dict == other.dict;
            case K::Function: return v.fn == other.fn;
            default: return values_equal(v, other);
        }
    }
    fail("chat template: unknown test '%s'", name.c_str());
}

}  // namespace bee::chat::jinja
