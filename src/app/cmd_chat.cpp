// app/cmd_chat: `bee chat` — interactive terminal chat with a model's own chat template. The KV cache
// is kept between turns: each turn re-renders the conversation, and only the tokens after the longest
// prefix already in the cache are decoded (normally just the new turn).
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "app/args.h"
#include "app/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "chat/builtin_templates.h"
#include "chat/template.h"
#include "model/engine.h"
#include "sample/sampler.h"

namespace bee {

namespace {

struct ChatOptions {
    ModelOptions model;
    SamplingParams sampling;
    std::string template_file, template_name, system, kwargs_json;
    int32_t n_predict = -1;
};

// The conversation and what of it is in the KV cache (sequence 0).
class ChatSession {
public:
    ChatSession(Engine& eng, chat::Template tmpl, const ChatOptions& o)
        : eng_(eng), tok_(eng.model().tokenizer()), tmpl_(std::move(tmpl)), o_(o),
          sampler_(with_vocab(o.sampling, eng.model()), eng.model().hparams().n_vocab) {
        if (!o.kwargs_json.empty()) {
            kwargs_ = chat::Json::parse(o.kwargs_json, nullptr, false);
            if (!kwargs_.is_object()) fail("--chat-template-kwargs: expected a JSON object, got '%s'", o.kwargs_json.c_str());
        }
        reset();
    }

    void reset() {
        messages_ = chat::Json::array();
        if (!o_.system.empty()) messages_.push_back({{"role", "system"}, {"content", o_.system}});
        eng_.memory().clear_all();
        cached_.clear();
        sampler_.reset();
    }

    // One user turn: render, decode what is new, stream the reply to stdout. Returns the reply text.
    std::string turn(const std::string& user) {
        chat::Json messages = messages_;
        messages.push_back({{"role", "user"}, {"content", user}});
        std::vector<int32_t> prompt = render(messages);
        const int n_ctx = eng_.params().n_ctx;
        if ((int)prompt.size() >= n_ctx)
            fail("the conversation (%zu tokens) no longer fits the context (%d): type /reset or use a larger -c",
                 prompt.size(), n_ctx);
        const double t_prompt = time_ms();
        const size_t n_new = prefill(prompt);
        const double prompt_ms = time_ms() - t_prompt;

        StreamDecoder dec(tok_);
        std::string reply;
        const double t_gen = time_ms();
        int n_gen = 0;
        while (o_.n_predict < 0 || n_gen < o_.n_predict) {
            const int32_t id = sampler_.sample(logits_.data());
            sampler_.accept(id);
            if (tok_.is_eog(id)) break;
            ++n_gen;
            std::string piece = dec.push(id);
            reply += piece;
            fputs(piece.c_str(), stdout);
            fflush(stdout);
            if ((int)cached_.size() + 1 >= n_ctx) {
                fprintf(stderr, "\n[context full: reply cut; type /reset to start over]");
                break;
            }
            decode_from(std::vector<int32_t>{id}, 0);
        }
        std::string rest = dec.flush();
        reply += rest;
        fputs(rest.c_str(), stdout);
        fputs("\n", stdout);
        fflush(stdout);
        const double gen_ms = time_ms() - t_gen;
        BEE_LOG_INFO("turn: %zu prompt tokens decoded (%zu reused from the cache) in %.0f ms; %d tokens in %.0f ms (%.2f tokens/s)",
                     n_new, prompt.size() - n_new, prompt_ms, n_gen, gen_ms, gen_ms > 0 ? n_gen * 1000.0 / gen_ms : 0.0);
        messages_ = std::move(messages);
        messages_.push_back({{"role", "assistant"}, {"content", reply}});
        return reply;
    }

private:
    Engine& eng_;
    const Tokenizer& tok_;
    chat::Template tmpl_;
    const ChatOptions& o_;
    Sampler sampler_;
    chat::Json messages_, kwargs_ = chat::Json::object();
    std::vector<int32_t> cached_;  // tokens of sequence 0 in the KV cache, by position
    std::vector<float> logits_;    // logits after the last decoded token

    std::vector<int32_t> render(const chat::Json& messages) const {
        chat::ChatInput in;
        in.messages = messages;
        in.add_generation_prompt = true;
        in.kwargs = kwargs_;
        if (tok_.bos() >= 0) in.bos_token = tok_.token_to_piece(tok_.bos(), true);
        if (tok_.eos() >= 0) in.eos_token = tok_.token_to_piece(tok_.eos(), true);
        std::vector<int32_t> ids = tok_.encode(chat::apply(tmpl_, in), false, true);
        // Templates that print bos_token themselves already start with it; others get it from the vocab.
        if (tok_.add_bos() && tok_.bos() >= 0 && (ids.empty() || ids[0] != tok_.bos())) ids.insert(ids.begin(), tok_.bos());
        return ids;
    }

    // Decodes prompt tokens after the longest prefix already cached. Returns how many were decoded.
    size_t prefill(const std::vector<int32_t>& prompt) {
        size_t keep = 0;
        while (keep < cached_.size() && keep < prompt.size() && cached_[keep] == prompt[keep]) ++keep;
        if (keep == prompt.size()) --keep;  // decode at least one token to get fresh logits
        keep = (size_t)eng_.memory().cut_point(0, (int32_t)keep);  // recurrent rules may keep less
        eng_.memory().cut(0, (int32_t)keep);
        cached_.resize(keep);
        std::vector<int32_t> todo(prompt.begin() + (long)keep, prompt.end());
        for (int32_t id : todo) sampler_.accept(id);
        decode_from(todo, o_.model.n_batch);
        return todo.size();
    }

    // Decodes tokens at the next positions, in chunks of n_batch (0: one chunk); keeps the last logits.
    void decode_from(const std::vector<int32_t>& tokens, int n_batch) {
        const size_t chunk = n_batch > 0 ? (size_t)n_batch : tokens.size();
        DecodeOutput out;
        for (size_t at = 0; at < tokens.size(); at += chunk) {
            const size_t end = std::min(tokens.size(), at + chunk);
            Batch b;
            for (size_t k = at; k < end; ++k) b.add(tokens[k], (int32_t)(cached_.size() + k - at), 0, k + 1 == tokens.size());
            eng_.decode(b, out);
            cached_.insert(cached_.end(), tokens.begin() + (long)at, tokens.begin() + (long)end);
        }
        logits_.assign(out.logits_at(0), out.logits_at(0) + out.n_vocab);
    }
};

chat::Template load_template(const ChatOptions& o, const Model& model) {
    if (!o.template_file.empty()) return chat::Template::parse(read_file(o.template_file));
    if (!o.template_name.empty()) {
        const char* src = chat::builtin_template(o.template_name);
        if (!src) fail("--chat-template: unknown template '%s' (built-in: %s)", o.template_name.c_str(), chat::builtin_template_names());
        return chat::Template::parse(src);
    }
    const std::string src = model.gguf().get_str("tokenizer.chat_template", "");
    if (src.empty())
        fail("%s has no chat template (tokenizer.chat_template): pass --chat-template-file FILE or --chat-template NAME (%s)",
             o.model.model.c_str(), chat::builtin_template_names());
    return chat::Template::parse(src);
}

}  // namespace

int cmd_chat(int argc, char** argv) {
    ChatOptions o;
    ArgParser p("bee chat", "Interactive chat in the terminal with the model's chat template (/reset, /exit).");
    add_model_options(p, o.model);
    add_sampling_options(p, o.sampling);
    p.i32("-n,--n-predict", &o.n_predict, "most tokens per reply (-1: until end of turn) [-1]", -1, INT32_MAX);
    p.str("--chat-template-file", &o.template_file, "FILE", "Jinja chat template to use instead of the model's");
    p.str("--chat-template", &o.template_name, "NAME", "built-in chat template: chatml or gemma");
    p.str("--chat-template-kwargs", &o.kwargs_json, "JSON", "extra template variables, e.g. '{\"enable_thinking\":false}'");
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
        if (interactive) fprintf(stderr, "bee chat: %s — /reset clears the conversation, /exit or Ctrl-D ends\n", model->describe().c_str());
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
