// chat/jinja_value: Python semantics for interpreter values (see jinja_value.h).
#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace bee::chat::jinja {

const Value* Dict::find(std::string_view key) const {
    if (!index_.empty()) {
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &items[it->second].second;
    }
    for (const auto& kv : items)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

Value* Dict::find(std::string_view key) { return const_cast<Value*>(std::as_const(*this).find(key)); }

void Dict::set(const std::string& key, Value v) {
    if (Value* slot = find(key)) {
        *slot = std::move(v);
        return;
    }
    RenderScope::charge(1);
    items.emplace_back(key, std::move(v));
    if (!index_.empty()) {
        index_.emplace(key, items.size() - 1);
    } else if (items.size() >= kIndexFrom) {
        for (size_t i = 0; i < items.size(); i++) index_.emplace(items[i].first, i);
    }
}

void Dict::clear() {
    decltype(items)().swap(items);
    decltype(index_)().swap(index_);
}

namespace {
thread_local RenderScope* active_scope = nullptr;
thread_local int nesting = 0;

// Bounds the recursion of printing, comparing and serialising values: a template can build a
// cyclic (l.append(l)) or very deep value, which Python would print as [...] or refuse.
struct NestGuard {
    NestGuard() {
        if (++nesting > 200) {
            --nesting;
            fail("chat template: value nested too deeply (or containing itself) to print or compare");
        }
    }
    ~NestGuard() { --nesting; }
    NestGuard(const NestGuard&) = delete;
    NestGuard& operator=(const NestGuard&) = delete;
};
}  // namespace

RenderScope::RenderScope() : outer_(active_scope) { active_scope = this; }

RenderScope::~RenderScope() {
    active_scope = outer_;
    // Every container is still held here: emptying them one by one destroys only leaf values.
    for (auto& l : lists_) List().swap(*l);
    for (auto& d : dicts_) d->clear();
}

void RenderScope::charge(int64_t work, size_t string_bytes) {
    RenderScope* s = active_scope;
    if (!s) return;
    s->work_ += work;
    s->string_bytes_ += string_bytes;
    if (s->work_ > kMaxWork) fail("chat template: rendering took more than %lld steps", (long long)kMaxWork);
    if (s->string_bytes_ > kMaxStringBytes)
        fail("chat template: rendering built more than %zu bytes of strings", kMaxStringBytes);
}

void RenderScope::keep(const std::shared_ptr<List>& list) {
    if (active_scope) active_scope->lists_.push_back(list);
}

void RenderScope::keep(const std::shared_ptr<Dict>& dict) {
    if (active_scope) active_scope->dicts_.push_back(dict);
}

Value Value::undefined(std::string name) {
    Value v;
    v.s = std::move(name);
    return v;
}
Value Value::none() {
    Value v;
    v.kind = Kind::None;
    return v;
}
Value Value::boolean(bool x) {
    Value v;
    v.kind = Kind::Bool;
    v.b = x;
    return v;
}
Value Value::integer(int64_t x) {
    Value v;
    v.kind = Kind::Int;
    v.i = x;
    return v;
}
Value Value::number(double x) {
    Value v;
    v.kind = Kind::Float;
    v.f = x;
    return v;
}
Value Value::string(std::string x) {
    RenderScope::charge(0, x.size());
    Value v;
    v.kind = Kind::String;
    v.s = std::move(x);
    return v;
}
Value Value::new_list(List items) {
    Value v;
    v.kind = Kind::List;
    RenderScope::charge(1 + int64_t(items.size()));
    v.list = std::make_shared<List>(std::move(items));
    RenderScope::keep(v.list);
    return v;
}
Value Value::new_dict() {
    Value v;
    v.kind = Kind::Dict;
    RenderScope::charge(1);
    v.dict = std::make_shared<Dict>();
    RenderScope::keep(v.dict);
    return v;
}
Value Value::function(Function f) {
    Value v;
    v.kind = Kind::Function;
    v.fn = std::make_shared<Function>(std::move(f));
    return v;
}

bool Value::truthy() const {
    switch (kind) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return b;
        case Kind::Int: return i != 0;
        case Kind::Float: return f != 0;
        case Kind::String: return !s.empty();
        case Kind::List: return !list->empty();
        case Kind::Dict: return !dict->items.empty();
        case Kind::Function: return true;
    }
    return false;
}

double Value::as_double() const {
    if (kind == Kind::Float) return f;
    if (kind == Kind::Int) return double(i);
    if (kind == Kind::Bool) return b ? 1 : 0;
    fail("chat template: expected a number, got %s", type_name());
}

const char* Value::type_name() const {
    switch (kind) {
        case Kind::Undefined: return "undefined";
        case Kind::None: return "none";
        case Kind::Bool: return "boolean";
        case Kind::Int: return "integer";
        case Kind::Float: return "float";
        case Kind::String: return "string";
        case Kind::List: return "list";
        case Kind::Dict: return is_namespace ? "namespace" : "dict";
        case Kind::Function: return "function";
    }
    return "?";
}

Value Args::get(size_t index, std::string_view name, Value fallback) const {
    if (index < pos.size()) return pos[index];
    for (const auto& kv : kw)
        if (kv.first == name) return kv.second;
    return fallback;
}

bool values_equal(const Value& a, const Value& b) {
    NestGuard guard;
    using K = Value::Kind;
    if (a.is_number() && b.is_number()) {
        if (a.kind == K::Float || b.kind == K::Float) return a.as_double() == b.as_double();
        return (a.kind == K::Bool ? int64_t(a.b) : a.i) == (b.kind == K::Bool ? int64_t(b.b) : b.i);
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case K::Undefined:
        case K::None: return true;
        case K::String: return a.s == b.s;
        case K::List:
            if (a.list->size() != b.list->size()) return false;
            for (size_t k = 0; k < a.list->size(); ++k)
                if (!values_equal((*a.list)[k], (*b.list)[k])) return false;
            return true;
        case K::Dict:
            if (a.dict->items.size() != b.dict->items.size()) return false;
            for (const auto& kv : a.dict->items) {
                const Value* other = b.dict->find(kv.first);
                if (!other || !values_equal(kv.second, *other)) return false;
            }
            return true;
        case K::Function: return a.fn == b.fn;
        default: return false;
    }
}

int compare_values(const Value& a, const Value& b) {
    NestGuard guard;
    if (a.is_number() && b.is_number()) {
        if (a.kind == Value::Kind::Int && b.kind == Value::Kind::Int) return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
        double x = a.as_double(), y = b.as_double();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
    if (a.is_list() && b.is_list()) {
        for (size_t k = 0; k < a.list->size() && k < b.list->size(); ++k) {
            int c = compare_values((*a.list)[k], (*b.list)[k]);
            if (c != 0) return c;
        }
        return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
    }
    fail("chat template: cannot order a %s and a %s", a.type_name(), b.type_name());
}

std::string format_float(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string sci(buf, res.ptr);  // "-d.ddde+XX"
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    size_t e_at = sci.find('e');
    int exp10 = std::atoi(sci.c_str() + e_at + 1);
    std::string digits = sci.substr(0, 1) + (e_at > 2 ? sci.substr(2, e_at - 2) : "");
    if (exp10 < -4 || exp10 >= 16) {  // Python repr switches to exponent notation here
        std::string out = sign + digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char e[16];
        std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
        return out + e;
    }
    std::string out;
    if (exp10 < 0) {
        out = "0." + std::string(size_t(-exp10 - 1), '0') + digits;
    } else if (size_t(exp10) + 1 >= digits.size()) {
        out = digits + std::string(size_t(exp10) + 1 - digits.size(), '0') + ".0";
    } else {
        out = digits.substr(0, size_t(exp10) + 1) + "." + digits.substr(size_t(exp10) + 1);
    }
    return sign + out;
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string to_repr(const Value& v) {
    if (!v.is_string()) return to_str(v);
    const bool has_single = v.s.find('\'') != std::string::npos;
    const char quote = has_single && v.s.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : v.s) {
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c == quote) out += std::string("\\") + char(c);
        else if (c < 0x20 || c == 0x7f) out += strfmt("\\x%02x", c);
        else out += char(c);
    }
    return out + quote;
}

std::string to_str(const Value& v) {
    NestGuard guard;
    switch (v.kind) {
        case Value::Kind::Undefined: return "";
        case Value::Kind::None: return "None";
        case Value::Kind::Bool: return v.b ? "True" : "False";
        case Value::Kind::Int: return std::to_string(v.i);
        case Value::Kind::Float: return format_float(v.f);
        case Value::Kind::String: return v.s;
        case Value::Kind::List: {
            std::string out = v.is_tuple ? "(" : "[";
            for (size_t k = 0; k < v.list->size(); ++k) out += (k ? ", " : "") + to_repr((*v.list)[k]);
            if (v.is_tuple) return out + (v.list->size() == 1 ? ",)" : ")");
            return out + "]";
        }
        case Value::Kind::Dict: {
            std::string out = v.is_namespace ? "<Namespace {" : "{";
            bool first = true;
            for (const auto& kv : v.dict->items) {
                out += (first ? "" : ", ") + to_repr(Value::string(kv.first)) + ": " + to_repr(kv.second);
                first = false;
            }
            return out + (v.is_namespace ? "}>" : "}");
        }
        case Value::Kind::Function: return "<function>";
    }
    return "";
}

static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    for (size_t k = 0; k < s.size(); ++k) {
        const unsigned char c = static_cast<unsigned char>(s[k]);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    out += strfmt("\\u%04x", c);
                } else if (c >= 0x80 && ensure_ascii) {
                    // Decode one UTF-8 sequence (invalid bytes pass as U+FFFD) and write \uXXXX units.
                    const size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
                    uint32_t cp = len == 1 ? 0xFFFD : c & (0x7F >> len);
                    for (size_t j = 1; j < len; ++j) {
                        if (k + j >= s.size()) {
                            cp = 0xFFFD;
                            break;
                        }
                        cp = (cp << 6) | (static_cast<unsigned char>(s[k + j]) & 0x3F);
                    }
                    k += std::min(len, s.size() - k) - 1;
                    if (cp >= 0x10000) {
                        cp -= 0x10000;
                        out += strfmt("\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
                    } else {
                        out += strfmt("\\u%04x", cp);
                    }
                } else {
                    out += char(c);
                }
        }
    }
    out += '"';
}

static void json_value(std::string& out, const Value& v, const JsonStyle& st, int depth) {
    NestGuard guard;
    auto newline = [&](int level) {
        if (st.indent < 0) return;
        out += '\n';
        out.append(size_t(st.indent) * size_t(level), ' ');
    };
    const std::string item_sep = !st.item_sep.empty() ? st.item_sep : st.indent < 0 ? ", " : ",";
    const std::string key_sep = !st.key_sep.empty() ? st.key_sep : ": ";
    switch (v.kind) {
        case Value::Kind::None: out += "null"; return;
        case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
        case Value::Kind::Int: out += std::to_string(v.i); return;
        case Value::Kind::Float:
            out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity") : format_float(v.f);
            return;
        case Value::Kind::String: json_string(out, v.s, st.ensure_ascii); return;
        case Value::Kind::List:
            if (v.list->empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t k = 0; k < v.list->size(); ++k) {
                if (k) out += item_sep;
                newline(depth + 1);
                json_value(out, (*v.list)[k], st, depth + 1);
            }
            newline(depth);
            out += ']';
            return;
        case Value::Kind::Dict: {
            if (v.dict->items.empty()) {
                out += "{}";
                return;
            }
            std::vector<const std::pair<std::string, Value>*> entries;
            for (const auto& kv : v.dict->items) entries.push_back(&kv);
            if (st.sort_keys)
                std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
            out += '{';
            for (size_t k = 0; k < entries.size(); ++k) {
                if (k) out += item_sep;
                newline(depth + 1);
                json_string(out, entries[k]->first, st.ensure_ascii);
                out += key_sep;
                json_value(out, entries[k]->second, st, depth + 1);
            }
            newline(depth);
            out += '}';
            return;
        }
        case Value::Kind::Undefined:
        case Value::Kind::Function: fail("chat template: tojson cannot serialise a value of type %s", v.type_name());
    }
}

std::string to_json(const Value& v, const JsonStyle& style) {
    std::string out;
    json_value(out, v, style, 0);
    return out;
}

Value from_json(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::json::value_t::null: return Value::none();
        case nlohmann::json::value_t::boolean: return Value::boolean(j.get<bool>());
        case nlohmann::json::value_t::number_integer: return Value::integer(j.get<int64_t>());
        case nlohmann::json::value_t::number_unsigned: return Value::integer(int64_t(j.get<uint64_t>()));
        case nlohmann::json::value_t::number_float: return Value::number(j.get<double>());
        case nlohmann::json::value_t::string: return Value::string(j.get<std::string>());
        case nlohmann::json::value_t::array: {
            Value out = Value::new_list();
            for (const auto& e : j) out.list->push_back(from_json(e));
            return out;
        }
        case nlohmann::json::value_t::object: {
            Value out = Value::new_dict();
            for (auto it = j.begin(); it != j.end(); ++it) out.dict->set(it.key(), from_json(it.value()));
            return out;
        }
        default: return Value::none();
    }
}

}  // namespace bee::chat::jinja
