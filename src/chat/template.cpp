// chat/template: Template (parse + render) and chat::apply, the glue between an OpenAI request and the
// Jinja interpreter (jinja_*.cpp).
#include "chat/template.h"

#include <ctime>

#include "base/error.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"

namespace bee::chat {

struct Template::Impl {
    jinja::Body body;
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

std::string Template::render(const Json& context) const { return render(context, int64_t(std::time(nullptr))); }

std::string Template::render(const Json& context, int64_t now_unix) const {
    if (!context.is_object()) fail("chat template: the render context must be a JSON object");
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
    for (auto it = in.kwargs.begin(); it != in.kwargs.end(); ++it) ctx[it.key()] = it.value();
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
