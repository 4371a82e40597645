// chat/jinja_value: the dynamic value of the Jinja interpreter, with Python semantics (what jinja2 does
// on top of Python objects): truthiness, ==, ordering, str() / repr() text, and JSON in and out.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace bee::chat::jinja {

struct Value;
struct Args;
using List = std::vector<Value>;
using Function = std::function<Value(Args&)>;

// Insertion-ordered string-keyed map (Python dicts keep insertion order; chat templates only use
// string keys). Small dicts are searched linearly; from kIndexFrom keys on, a hash index finds a key
// (a request's chat_template_kwargs or tool schemas may hold many).
struct Dict {
    std::vector<std::pair<std::string, Value>> items;  // only set() adds, so the index stays true
    const Value* find(std::string_view key) const;
    Value* find(std::string_view key);
    void set(const std::string& key, Value v);
    void clear();

private:
    struct KeyHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    static constexpr size_t kIndexFrom = 16;
    std::unordered_map<std::string, size_t, KeyHash, std::equal_to<>> index_;  // key -> position in items
};

struct Value {
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function };
    Kind kind = Kind::Undefined;
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;  // String; for Undefined, the name that was looked up (for error messages)
    // note: lists, dicts and functions are shared, as Python objects are: `set ns.x = ...` on a
    // namespace and `list.append` are seen through every name bound to the same object.
    std::shared_ptr<List> list;
    std::shared_ptr<Dict> dict;
    std::shared_ptr<Function> fn;
    bool is_namespace = false;  // a dict made by namespace(): attributes may be assigned
    bool is_tuple = false;      // a list that prints as a Python tuple: (1, 2), ('a',)
    bool is_safe = false;       // a string marked |safe (jinja2 Markup): `+` HTML-escapes the other side

    static Value undefined(std::string name = {});
    static Value none();
    static Value boolean(bool v);
    static Value integer(int64_t v);
    static Value number(double v);
    static Value string(std::string v);
    static Value new_list(List items = {});
    static Value new_dict();
    static Value function(Function f);

    bool is_undefined() const { return kind == Kind::Undefined; }
    bool is_none() const { return kind == Kind::None; }
    bool is_string() const { return kind == Kind::String; }
    bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
    bool is_list() const { return kind == Kind::List; }
    bool is_dict() const { return kind == Kind::Dict; }
    bool is_function() const { return kind == Kind::Function; }

    bool truthy() const;
    double as_double() const;  // numbers only (bool counts as 0/1)
    const char* type_name() const;
};

// One per render (thread-local while alive): the work budget and the owner of every list and dict
// created meanwhile. Holding them all until the end means no container is destroyed mid-render, so
// dropping a deeply nested value never recurses through the stack, and emptying them at the end
// breaks the reference cycles a template can build (l.append(l)) that shared ownership would leak.
class RenderScope {
public:
    RenderScope();
    ~RenderScope();
    RenderScope(const RenderScope&) = delete;
    RenderScope& operator=(const RenderScope&) = delete;

    // Counts work (statements, loop iterations, values created) and bytes of strings built;
    // throws bee::Error past kMaxWork / kMaxStringBytes. No-ops outside a render.
    static void charge(int64_t work, size_t string_bytes = 0);
    static void keep(const std::shared_ptr<List>& list);
    static void keep(const std::shared_ptr<Dict>& dict);

    static constexpr int64_t kMaxWork = 2'000'000;
    static constexpr size_t kMaxStringBytes = size_t(128) << 20;

private:
    std::vector<std::shared_ptr<List>> lists_;
    std::vector<std::shared_ptr<Dict>> dicts_;
    int64_t work_ = 0;
    size_t string_bytes_ = 0;
    RenderScope* outer_;
};

// Positional and keyword arguments of a call, filter or test.
struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
    // Argument `index` by position, else by keyword `name`, else `fallback`.
    Value get(size_t index, std::string_view name, Value fallback = Value::undefined()) const;
};

bool values_equal(const Value& a, const Value& b);
// Python ordering (numbers, strings, lists); throws bee::Error for other types.
int compare_values(const Value& a, const Value& b);

std::string to_str(const Value& v);   // Python str(): what {{ v }} prints
std::string to_repr(const Value& v);  // Python repr(): how strings look inside printed lists/dicts

// JSON the way Hugging Face's tojson filter writes it (Python json.dumps; by default ensure_ascii=False,
// keys in insertion order, ", " and ": " separators, or "," and newlines + `indent` spaces when indent >= 0).
struct JsonStyle {
    int indent = -1;
    std::string item_sep, key_sep;  // empty: json.dumps' defaults for the indent
    bool sort_keys = false;
    bool ensure_ascii = false;  // non-ASCII as \uXXXX (surrogate pairs above U+FFFF)
};
std::string to_json(const Value& v, const JsonStyle& style = {});

Value from_json(const nlohmann::ordered_json& j);

// HTML escaping as jinja2's escape filter / Markup does (& < > " ').
std::string html_escape(const std::string& s);

// Python float repr: shortest round-trip digits, always with a '.' or exponent ("1.0", "1e-05").
std::string format_float(double v);

}  // namespace bee::chat::jinja
