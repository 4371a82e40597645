// chat/jinja_methods: attribute lookup (`obj.name`), the Python methods templates call on strings,
// dicts and lists, and the global functions (range, namespace, dict, raise_exception, strftime_now).
#include <cctype>
#include <cmath>
#include <ctime>

#include "base/error.h"
#include "chat/jinja_eval.h"

namespace bee::chat::jinja {
namespace {

constexpr const char* kWhitespace = " \t\n\r\v\f";

std::string arg_string(const Args& a, size_t idx, const char* name, const char* method) {
    Value v = a.get(idx, name);
    if (!v.is_string()) fail("chat template: %s() argument '%s' must be a string, got %s", method, name, v.type_name());
    return v.s;
}

std::string strip(const std::string& s, const Value& chars_arg, bool left, bool right) {
    std::string chars = chars_arg.is_string() ? chars_arg.s : kWhitespace;
    size_t from = left ? s.find_first_not_of(chars) : 0;
    if (from == std::string::npos) return "";
    size_t to = right ? s.find_last_not_of(chars) : s.size() - 1;
    return s.substr(from, to - from + 1);
}

Value split(const std::string& s, const Value& sep, const Value& maxsplit_arg) {
    int64_t maxsplit = maxsplit_arg.kind == Value::Kind::Int ? maxsplit_arg.i : -1;
    Value out = Value::new_list();
    if (sep.is_none() || sep.is_undefined()) {  // runs of whitespace, no empty parts
        size_t k = s.find_first_not_of(kWhitespace);
        while (k != std::string::npos) {
            if (maxsplit >= 0 && int64_t(out.list->size()) == maxsplit) {
                out.list->push_back(Value::string(strip(s.substr(k), Value::none(), false, true)));
                break;
            }
            size_t end = s.find_first_of(kWhitespace, k);
            out.list->push_back(Value::string(s.substr(k, end == std::string::npos ? std::string::npos : end - k)));
            k = end == std::string::npos ? end : s.find_first_not_of(kWhitespace, end);
        }
        return out;
    }
    if (!sep.is_string() || sep.s.empty()) fail("chat template: split() separator must be a non-empty string");
    size_t k = 0;
    while (true) {
        size_t at = s.find(sep.s, k);
        if (at == std::string::npos || (maxsplit >= 0 && int64_t(out.list->size()) == maxsplit)) {
            out.list->push_back(Value::string(s.substr(k)));
            return out;
        }
        out.list->push_back(Value::string(s.substr(k, at - k)));
        k = at + sep.s.size();
    }
}

std::string replace_all(std::string s, const std::string& from, const std::string& to, int64_t count) {
    if (from.empty()) return s;
    size_t k = 0;
    for (int64_t n = 0; count < 0 || n < count; ++n) {
        k = s.find(from, k);
        if (k == std::string::npos) break;
        s.replace(k, from.size(), to);
        k += to.size();
        if (s.size() > kMaxOutputBytes) fail("chat template: replace() result too large");
    }
    return s;
}

// Python str.title(): a letter after a non-letter is upper-cased, other letters lower-cased (ASCII).
std::string title_case(const std::string& s) {
    std::string out = s;
    bool prev_letter = false;
    for (char& c : out) {
        bool letter = std::isalpha(static_cast<unsigned char>(c));
        if (letter)
            c = char(prev_letter ? std::tolower(static_cast<unsigned char>(c))
                                 : std::toupper(static_cast<unsigned char>(c)));
        prev_letter = letter;
    }
    return out;
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
    auto one = [&](const Value& v) {
        if (!v.is_string()) fail("chat template: startswith()/endswith() need a string");
        if (v.s.size() > s.size()) return false;
        return prefix ? s.compare(0, v.s.size(), v.s) == 0 : s.compare(s.size() - v.s.size(), v.s.size(), v.s) == 0;
    };
    if (affix.is_list()) {
        for (const Value& v : *affix.list)
            if (one(v)) return true;
        return false;
    }
    return one(affix);
}

Value string_method(const std::string& self, const std::string& name) {
    auto m = [&](auto fn) { return Value::function([self, fn](Args& a) { return fn(self, a); }); };
    if (name == "strip")
        return m([](const std::string& s, Args& a) { return Value::string(strip(s, a.get(0, "chars"), true, true)); });
    if (name == "lstrip")
        return m([](const std::string& s, Args& a) { return Value::string(strip(s, a.get(0, "chars"), true, false)); });
    if (name == "rstrip")
        return m([](const std::string& s, Args& a) { return Value::string(strip(s, a.get(0, "chars"), false, true)); });
    if (name == "split")
        return m([](const std::string& s, Args& a) { return split(s, a.get(0, "sep"), a.get(1, "maxsplit")); });
    if (name == "startswith")
        return m(
            [](const std::string& s, Args& a) { return Value::boolean(affix_match(s, a.get(0, "prefix"), true)); });
    if (name == "endswith")
        return m(
            [](const std::string& s, Args& a) { return Value::boolean(affix_match(s, a.get(0, "suffix"), false)); });
    if (name == "replace")
        return m([](const std::string& s, Args& a) {
            Value count = a.get(2, "count");
            return Value::string(replace_all(s, arg_string(a, 0, "old", "replace"), arg_string(a, 1, "new", "replace"),
                                             count.kind == Value::Kind::Int ? count.i : -1));
        });
    if (name == "upper" || name == "lower")
        return m([up = name == "upper"](const std::string& s, Args&) {
            std::string out = s;
            for (char& c : out)
                c = char(up ? std::toupper(static_cast<unsigned char>(c))
                            : std::tolower(static_cast<unsigned char>(c)));
            return Value::string(out);
        });
    if (name == "title") return m([](const std::string& s, Args&) { return Value::string(title_case(s)); });
    if (name == "capitalize")
        return m([](const std::string& s, Args&) {
            std::string out = s;
            for (size_t k = 0; k < out.size(); ++k)
                out[k] = char(k == 0 ? std::toupper(static_cast<unsigned char>(out[k]))
                                     : std::tolower(static_cast<unsigned char>(out[k])));
            return Value::string(out);
        });
    if (name == "find" || name == "rfind" || name == "count")
        return m([name](const std::string& s, Args& a) {
            std::string sub = arg_string(a, 0, "sub", name.c_str());
            if (name == "find") {
                size_t at = s.find(sub);
                return Value::integer(at == std::string::npos ? -1 : int64_t(at));
            }
            if (name == "rfind") {
                size_t at = s.rfind(sub);
                return Value::integer(at == std::string::npos ? -1 : int64_t(at));
            }
            int64_t n = 0;
            for (size_t at = sub.empty() ? std::string::npos : s.find(sub); at != std::string::npos;
                 at = s.find(sub, at + sub.size()))
                ++n;
            return Value::integer(n);
        });
    if (name == "join")
        return m([](const std::string& s, Args& a) {
            std::string out;
            bool first = true;
            for (const Value& v : iterate(a.get(0, "iterable"))) {
                out += (first ? "" : s) + to_str(v);
                first = false;
            }
            return Value::string(out);
        });
    if (name == "isdigit" || name == "isalpha" || name == "isspace")
        return m([name](const std::string& s, Args&) {
            bool all = !s.empty();
            for (unsigned char c : s)
                all = all && (name == "isdigit"   ? std::isdigit(c)
                              : name == "isalpha" ? std::isalpha(c)
                                                  : std::isspace(c));
            return Value::boolean(all);
        });
    return Value::undefined(name);
}

Value dict_method(const Value& self, const std::string& name) {
    auto m = [&](auto fn) { return Value::function([self, fn](Args& a) { return fn(*self.dict, a); }); };
    if (name == "get")
        return m([](Dict& d, Args& a) {
            Value key = a.get(0, "key");
            const Value* v = key.is_string() ? d.find(key.s) : nullptr;
            return v ? *v : a.get(1, "default", Value::none());
        });
    if (name == "items")
        return m([](Dict& d, Args&) {
            Value out = Value::new_list();
            for (const auto& kv : d.items) {
                Value pair = Value::new_list({Value::string(kv.first), kv.second});
                pair.is_tuple = true;
                out.list->push_back(pair);
            }
            return out;
        });
    if (name == "keys" || name == "values")
        return m([keys = name == "keys"](Dict& d, Args&) {
            Value out = Value::new_list();
            for (const auto& kv : d.items) out.list->push_back(keys ? Value::string(kv.first) : kv.second);
            return out;
        });
    if (name == "update")
        return m([](Dict& d, Args& a) {
            Value other = a.get(0, "other");
            if (other.is_dict())
                for (const auto& kv : other.dict->items) d.set(kv.first, kv.second);
            for (const auto& kv : a.kw) d.set(kv.first, kv.second);
            return Value::none();
        });
    return Value::undefined(name);
}

Value list_method(const Value& self, const std::string& name) {
    auto m = [&](auto fn) { return Value::function([self, fn](Args& a) { return fn(*self.list, a); }); };
    if (name == "append")
        return m([](List& l, Args& a) {
            if (l.size() >= size_t(kMaxRange)) fail("chat template: list grew past %lld items", (long long)kMaxRange);
            RenderScope::charge(1);
            l.push_back(a.get(0, "item"));
            return Value::none();
        });
    if (name == "pop")
        return m([](List& l, Args& a) {
            if (l.empty()) fail("chat template: pop from an empty list");
            Value idx = a.get(0, "index", Value::integer(-1));
            int64_t k = idx.kind == Value::Kind::Int ? idx.i : -1;
            if (k < 0) k += int64_t(l.size());
            if (k < 0 || k >= int64_t(l.size())) fail("chat template: pop index out of range");
            Value v = l[size_t(k)];
            l.erase(l.begin() + k);
            return v;
        });
    if (name == "index" || name == "count")
        return m([name](List& l, Args& a) {
            Value item = a.get(0, "value");
            int64_t n = 0;
            for (size_t k = 0; k < l.size(); ++k)
                if (values_equal(l[k], item)) {
                    if (name == "index") return Value::integer(int64_t(k));
                    ++n;
                }
            if (name == "index") fail("chat template: index(): value is not in the list");
            return Value::integer(n);
        });
    return Value::undefined(name);
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name) {
    switch (obj.kind) {
        case Value::Kind::Undefined:
            fail("chat template: '%s' is undefined (cannot read its attribute '%s')", obj.s.c_str(), name.c_str());
        case Value::Kind::String: return string_method(obj.s, name);
        case Value::Kind::List: return list_method(obj, name);
        case Value::Kind::Dict: {
            if (!obj.is_namespace) {
                Value method = dict_method(obj, name);
                if (method.is_function()) return method;
            }
            const Value* v = obj.dict->find(name);
            return v ? *v : Value::undefined(name);
        }
        default: return Value::undefined(name);
    }
}

static Value make_range(Args& a) {
    std::vector<int64_t> n;
    for (const Value& v : a.pos) {
        if (v.kind != Value::Kind::Int)
            fail("chat template: range() arguments must be integers, got %s", v.type_name());
        n.push_back(v.i);
    }
    if (n.empty() || n.size() > 3) fail("chat template: range() takes 1 to 3 integers");
    int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
    if (step == 0) fail("chat template: range() step cannot be zero");
    const double count = std::ceil((double(stop) - double(start)) / double(step));
    if (count > double(kMaxRange)) fail("chat template: range() longer than %lld", (long long)kMaxRange);
    if (count > 0) RenderScope::charge(int64_t(count));
    Value out = Value::new_list();
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
        if (int64_t(out.list->size()) >= kMaxRange)
            fail("chat template: range() longer than %lld", (long long)kMaxRange);
        out.list->push_back(Value::integer(k));
    }
    return out;
}

void add_globals(Scope& root, int64_t now_unix) {
    root.vars["range"] = Value::function(make_range);
    auto dict_from = [](Args& a, bool ns) {
        Value d = Value::new_dict();
        d.is_namespace = ns;
        if (!a.pos.empty() && a.pos[0].is_dict())
            for (const auto& kv : a.pos[0].dict->items) d.dict->set(kv.first, kv.second);
        for (const auto& kv : a.kw) d.dict->set(kv.first, kv.second);
        return d;
    };
    root.vars["namespace"] = Value::function([dict_from](Args& a) { return dict_from(a, true); });
    root.vars["dict"] = Value::function([dict_from](Args& a) { return dict_from(a, false); });
    root.vars["raise_exception"] = Value::function(
        [](Args& a) -> Value { fail("chat template raised an error: %s", to_str(a.get(0, "message")).c_str()); });
    root.vars["strftime_now"] = Value::function([now_unix](Args& a) {
        Value fmt = a.get(0, "format");
        if (!fmt.is_string()) fail("chat template: strftime_now() needs a format string");
        std::time_t t = std::time_t(now_unix);
        std::tm tm{};
        gmtime_r(&t, &tm);
        char buf[256];
        size_t n = std::strftime(buf, sizeof buf, fmt.s.c_str(), &tm);
        return Value::string(std::string(buf, n));
    });
}

}  // namespace bee::chat::jinja
