// chat/template: Template (parse + render) and chat::apply, the glue between an OpenAI request and the
// Jinja interpreter (jinja_*.cpp).
#include "chat/template.h"

#include <ctime>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"
#include "chat/builtin_templates.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"

namespace bee::chat {

struct Template::Impl {
    jinja::Body body;
    const builtin::Format* builtin = nullptr;  // set: a built-in format instead of `body`
};

Template::Template(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

Template Template::parse(std::string_view source) {
    auto impl = std::make_unique<Impl>();
    impl->body = jinja::parse_template(source);
    return Template(std::move(impl));
}

Template Template::load(std::string_view source) {
    const builtin::Format* format = find_builtin(source);
    if (!format) return parse(source);
    auto impl = std::make_unique<Impl>();
    impl->builtin = format;
    return Template(std::move(impl));
}

std::string Template::render(const Json& context) const { return render(context, int64_t(std::time(nullptr))); }

namespace {

// Walks the context without recursion and refuses it past InputLimits.
void check_input_size(const Json& context) {
    std::vector<std::pair<const Json*, int>> todo{{&context, 0}};
    size_t n_values = 0, n_bytes = 0;
    while (!todo.empty()) {
        auto [v, depth] = todo.back();
        todo.pop_back();
        if (++n_values > InputLimits::kMaxValues)
            fail("chat template input: more than %zu values (keys, items and scalars; the limit is %zu)",
                 InputLimits::kMaxValues, InputLimits::kMaxValues);
        if (v->is_string()) n_bytes += v->get_ref<const std::string&>().size();
        if (v->is_structured() && depth >= InputLimits::kMaxDepth)
            fail("chat template input: nested deeper than %d levels (the limit is %d)", InputLimits::kMaxDepth,
                 InputLimits::kMaxDepth);
        if (v->is_object())
            for (auto it = v->begin(); it != v->end(); ++it) {
                n_bytes += it.key().size();
                todo.push_back({&it.value(), depth + 1});
            }
        else if (v->is_array())
            for (const Json& x : *v) todo.push_back({&x, depth + 1});
        if (n_bytes > InputLimits::kMaxStringBytes)
            fail("chat template input: more than %zu bytes of strings (the limit is %zu)", InputLimits::kMaxStringBytes,
                 InputLimits::kMaxStringBytes);
    }
}

}  // namespace

void merge_object(Json& dst, const Json& src) {
    if (!dst.is_object()) dst = Json::object();
    Json::object_t& d = dst.get_ref<Json::object_t&>();
    std::unordered_map<std::string, size_t> at;
    for (size_t i = 0; i < d.size(); i++) at.emplace((d.begin() + (ptrdiff_t)i)->first, i);
    for (auto it = src.begin(); it != src.end(); ++it) {
        auto [pos, added] = at.emplace(it.key(), d.size());
        if (added) d.emplace_back(it.key(), it.value());
        else (d.begin() + (ptrdiff_t)pos->second)->second = it.value();
    }
}

std::string Template::render(const Json& context, int64_t now_unix) const {
    if (!context.is_object()) fail("chat template: the render context must be a JSON object");
    check_input_size(context);
    if (impl_->builtin) {
        auto msgs = context.find("messages");
        auto gen = context.find("add_generation_prompt");
        return render_builtin(*impl_->builtin, msgs == context.end() ? Json::array() : *msgs,
                              gen != context.end() && gen->is_boolean() && gen->get<bool>());
    }
    jinja::RenderScope scope;  // owns every value the render creates, and bounds its work
    jinja::Renderer renderer(impl_->body, jinja::from_json(context), now_unix);
    return renderer.render();
}

std::string apply(const Template& tmpl, const ChatInput& in) {
    const int64_t now = in.now_unix != 0 ? in.now_unix : int64_t(std::time(nullptr));
    Json ctx = Json::object();
    ctx["messages"] = in.messages;
    if (!in.tools.is_null()) ctx["tools"] = in.tools;
    ctx["add_generation_prompt"] = in.add_generation_prompt;
    ctx["bos_token"] = in.bos_token;
    ctx["eos_token"] = in.eos_token;
    // llama.cpp gives Llama 3.x templates today's date this way ("26 Jul 2024" style).
    std::time_t t = std::time_t(now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[64];
    ctx["date_string"] = std::string(date, std::strftime(date, sizeof date, "%d %b %Y", &tm));
    ctx["datetime"] = std::string(date, std::strftime(date, sizeof date, "%b %d %Y", &tm));  // firefunction-v2
    if (in.kwargs.is_object()) merge_object(ctx, in.kwargs);
    try {
        return tmpl.render(ctx, now);
    } catch (const Error&) {
        // OpenAI clients send `content: null` on assistant turns that only call tools, and many
        // templates concatenate message.content: retry with "" there (llama.cpp does the same).
        bool changed = false;
        for (Json& m : ctx["messages"])
            if (m.is_object() && m.contains("content") && m["content"].is_null()) {
                m["content"] = "";
                changed = true;
            }
        if (!changed) throw;
        return tmpl.render(ctx, now);
    }
}

}  // namespace bee::chat
