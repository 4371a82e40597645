// app/cmd_chat: `bee chat` — interactive terminal chat with a model's own chat template, on the runtime
// with one slot. The slot's cache is kept between turns: each turn re-renders the conversation, and only
// the tokens after the longest prefix already cached are decoded (normally just the new turn).
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "app/args.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "chat/builtin_templates.h"
#include "chat/template.h"
#include "model/engine.h"
#include "runtime/local_run.h"
#include "sample/sampler.h"

namespace bee {

namespace {

struct ChatOptions {
    ModelOptions model;
    SamplingParams sampling;
    std::string template_file, template_name, system, kwargs_json;
    int32_t n_predict = -1;
};

// The conversation, run turn by turn on the runtime with one slot: each turn re-renders the whole
// conversation and the slot keeps the longest prefix its sequence already holds (normally everything
// before the new turn), as `bee serve` does for a chat request.
class ChatSession {
public:
    ChatSession(Engine& eng, chat::Template tmpl, const ChatOptions& o)
        : eng_(eng), tok_(eng.model().tokenizer()), tmpl_(std::move(tmpl)), o_(o), sched_(eng, sched_params(o)) {
        if (!o.kwargs_json.empty()) {
            kwargs_ = chat::Json::parse(o.kwargs_json, nullptr, false);
            if (!kwargs_.is_object())
                fail("--chat-template-kwargs: expected a JSON object, got '%s'", o.kwargs_json.c_str());
        }
        reset();
    }

    void reset() {
        messages_ = chat::Json::array();
        if (!o_.system.empty()) messages_.push_back({{"role", "system"}, {"content", o_.system}});
    }

    // One user turn: render, generate, stream the reply to stdout. Returns the reply text.
    std::string turn(const std::string& user) {
        chat::Json messages = messages_;
        messages.push_back({{"role", "user"}, {"content", user}});
        auto task = std::make_shared<runtime::Task>();
        task->id = ++n_turns_;
        task->prompt = render(messages);
        if ((int)task->prompt.size() >= eng_.params().n_ctx)
            fail("the conversation (%zu tokens) no longer fits the context (%d): type /reset or use a larger -c",
                 task->prompt.size(), eng_.params().n_ctx);
        task->params.sampling = with_vocab(o_.sampling, eng_.model());
        task->params.n_predict = o_.n_predict;
        runtime::LocalResult r = runtime::run_task(sched_, task, [](const runtime::TaskEvent& e) {
            fputs(e.content.c_str(), stdout);
            fflush(stdout);
        });
        fputs("\n", stdout);
        fflush(stdout);
        const runtime::FinishInfo& f = r.finish;
        if (f.truncated) fprintf(stderr, "[context full: reply cut; type /reset to start over]\n");
        BEE_LOG_INFO(
            "turn: %d prompt tokens decoded (%d reused from the cache) in %.0f ms; %d tokens in %.0f ms (%.2f "
            "tokens/s)",
            f.n_prompt - f.n_cached, f.n_cached, f.prompt_ms, (int)r.tokens.size(), f.predicted_ms,
            f.predicted_ms > 0 ? r.tokens.size() * 1000.0 / f.predicted_ms : 0.0);
        messages_ = std::move(messages);
        messages_.push_back({{"role", "assistant"}, {"content", r.content}});
        return r.content;
    }

private:
    Engine& eng_;
    const Tokenizer& tok_;
    chat::Template tmpl_;
    const ChatOptions& o_;
    runtime::Scheduler sched_;
    chat::Json messages_, kwargs_ = chat::Json::object();
    uint64_t n_turns_ = 0;

    static runtime::SchedulerParams sched_params(const ChatOptions& o) {
        runtime::SchedulerParams sp;
        sp.n_parallel = 1;
        sp.n_batch = o.model.n_batch;
        return sp;
    }

    std::vector<int32_t> render(const chat::Json& messages) const {
        chat::ChatInput in;
        in.messages = messages;
        in.add_generation_prompt = true;
        in.kwargs = kwargs_;
        if (tok_.bos() >= 0) in.bos_token = tok_.token_to_piece(tok_.bos(), true);
        if (tok_.eos() >= 0) in.eos_token = tok_.token_to_piece(tok_.eos(), true);
        std::vector<int32_t> ids = tok_.encode(chat::apply(tmpl_, in), false, true);
        // Templates that print bos_token themselves already start with it; others get it from the vocab.
        if (tok_.add_bos() && tok_.bos() >= 0 && (ids.empty() || ids[0] != tok_.bos()))
            ids.insert(ids.begin(), tok_.bos());
        return ids;
    }
};

chat::Template load_template(const ChatOptions& o, const Model& model) {
    const std::string src =
        chat::select_template(o.template_file, o.template_name, model.gguf().get_str("tokenizer.chat_template", ""));
    if (src.empty())
        fail(
            "%s has no chat template (tokenizer.chat_template): pass --chat-template-file FILE or --chat-template NAME "
            "(%s)",
            o.model.model.c_str(), chat::builtin_template_list().c_str());
    return chat::Template::load(src);
}

}  // namespace

int cmd_chat(int argc, char** argv) {
    ChatOptions o;
    ArgParser p("bee chat", "Interactive chat in the terminal with the model's chat template (/reset, /exit).");
    add_model_options(p, o.model);
    add_sampling_options(p, o.sampling);
    p.i32("-n,--n-predict", &o.n_predict, "most tokens per reply (-1: until end of turn) [-1]", -1, INT32_MAX);
    p.str("--chat-template-file", &o.template_file, "FILE", "Jinja chat template to use instead of the model's");
    p.str("--chat-template", &o.template_name, "NAME|JINJA",
          "built-in chat template (llama.cpp's names: chatml, llama3, gemma, mistral-v7, ...) or Jinja source");
    p.str("--chat-template-kwargs", &o.kwargs_json, "JSON",
          "extra template variables, e.g. '{\"enable_thinking\":false}'");
    p.str("--system", &o.system, "TEXT", "system message");
    try {
        if (!p.parse(argc, argv)) return 0;
        if (o.model.model.empty()) fail("no model given (use -m FILE)");
        std::unique_ptr<Model> model = load_model(o.model);
        chat::Template tmpl = load_template(o, *model);
        EngineParams ep = engine_params(o.model);
        Engine eng(*model, ep);
        ChatSession session(eng, std::move(tmpl), o);
        const bool interactive = isatty(STDIN_FILENO);
        if (interactive)
            fprintf(stderr, "bee chat: %s — /reset clears the conversation, /exit or Ctrl-D ends\n",
                    model->describe().c_str());
        std::string line;
        while (true) {
            if (interactive) {
                fputs("> ", stdout);
                fflush(stdout);
            }
            if (!std::getline(std::cin, line) || line == "/exit") break;
            if (line == "/reset") {
                session.reset();
                if (interactive) fputs("[conversation cleared]\n", stdout);
                continue;
            }
            if (line.empty()) continue;
            try {
                session.turn(line);
            } catch (const Error& e) {  // a turn that fails (template error, full context) leaves the chat usable
                fprintf(stderr, "error: %s\n", e.what());
            }
        }
        return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace bee
