// app/cmd_train_data: `bee train-data` — the target answers a prompt set through its chat template, and for every
// position of prompt + response the token, the residual stream entering the EAGLE-3 tap layers (Batch::
// capture_layers, the ids eagle3.target_layers names; default [2, L/2, L-3], specs/drafters.md §8.1) and the
// target's top-k next-token log-probabilities are written as .npy shards (app/train_data_files.h) for
// tools/train-drafter. Several prompts are answered at once, each in its own sequence (-np).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "app/args.h"
#include "app/commands.h"
#include "app/train_data_eval.h"
#include "app/train_data_files.h"
#include "base/error.h"
#include "base/fp16.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "chat/builtin_templates.h"
#include "chat/template.h"
#include "model/engine.h"
#include "sample/sampler.h"

namespace bee {

namespace {

struct TrainDataOptions {
    ModelOptions model;
    SamplingParams sampling;
    std::string prompts, out, layers_text, system, template_file, template_name;
    int32_t n_predict = 256, top_k = 32, n_parallel = 4, shard_size = 64, max_prompts = -1;
    bool resume = false;
    HeadEvalOptions eval;  // --eval-head: measure a head on a dump instead of dumping
};

// One prompt line: a JSON object {"prompt": TEXT} or {"messages": [...]} (optional "system"), or plain text.
chat::Json prompt_messages(const std::string& line, int lineno, const std::string& path, const std::string& system) {
    chat::Json msgs = chat::Json::array();
    if (!line.empty() && line[0] == '{') {
        chat::Json j = chat::Json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object())
            fail(
                "%s:%d: a line starting with '{' must be one JSON object ({\"prompt\": TEXT} or {\"messages\": [...]})",
                path.c_str(), lineno);
        if (j.contains("messages")) {
            if (!j["messages"].is_array() || j["messages"].empty())
                fail("%s:%d: \"messages\" must be a non-empty array of {role, content}", path.c_str(), lineno);
            return j["messages"];
        }
        if (!j.contains("prompt") || !j["prompt"].is_string())
            fail("%s:%d: the object has neither \"prompt\" (a string) nor \"messages\"", path.c_str(), lineno);
        const std::string sys = j.value("system", system);
        if (!sys.empty()) msgs.push_back({{"role", "system"}, {"content", sys}});
        msgs.push_back({{"role", "user"}, {"content", j["prompt"].get<std::string>()}});
        return msgs;
    }
    if (!system.empty()) msgs.push_back({{"role", "system"}, {"content", system}});
    msgs.push_back({{"role", "user"}, {"content", line}});
    return msgs;
}

struct Prompt {
    int index = 0;  // among the file's prompts
    std::string text;
    std::vector<int32_t> ids;
};

// Every non-empty line of the file through the chat template, tokenized as `bee chat` does.
std::vector<Prompt> read_prompts(const TrainDataOptions& o, const Model& model) {
    const Tokenizer& tok = model.tokenizer();
    const std::string src =
        chat::select_template(o.template_file, o.template_name, model.gguf().get_str("tokenizer.chat_template", ""));
    if (src.empty())
        fail(
            "%s has no chat template (tokenizer.chat_template): pass --chat-template NAME (%s) or --chat-template-file",
            o.model.model.c_str(), chat::builtin_template_list().c_str());
    const chat::Template tmpl = chat::Template::load(src);
    const std::string all = read_file(o.prompts);
    std::vector<Prompt> out;
    size_t at = 0;
    for (int lineno = 1; at < all.size() && (o.max_prompts < 0 || (int)out.size() < o.max_prompts); lineno++) {
        size_t nl = all.find('\n', at);
        if (nl == std::string::npos) nl = all.size();
        std::string line = all.substr(at, nl - at);
        at = nl + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        chat::ChatInput in;
        in.messages = prompt_messages(line, lineno, o.prompts, o.system);
        in.add_generation_prompt = true;
        if (tok.bos() >= 0) in.bos_token = tok.token_to_piece(tok.bos(), true);
        if (tok.eos() >= 0) in.eos_token = tok.token_to_piece(tok.eos(), true);
        Prompt p;
        p.index = (int)out.size();
        try {
            p.text = chat::apply(tmpl, in);
        } catch (const Error& e) {
            fail("%s:%d: the chat template refused this prompt: %s", o.prompts.c_str(), lineno, e.what());
        }
        p.ids = tok.encode(p.text, false, true);
        // Templates that print bos_token themselves already start with it; others get it from the vocab.
        if (tok.add_bos() && tok.bos() >= 0 && (p.ids.empty() || p.ids[0] != tok.bos()))
            p.ids.insert(p.ids.begin(), tok.bos());
        out.push_back(std::move(p));
    }
    if (out.empty()) fail("%s holds no prompt (one per line: text, or a JSON object)", o.prompts.c_str());
    return out;
}

std::vector<int32_t> capture_layers(const TrainDataOptions& o, int n_layer) {
    std::vector<int32_t> ids;
    if (o.layers_text.empty()) return {2, n_layer / 2, n_layer - 3};  // EAGLE-3's default taps
    size_t at = 0;
    while (at <= o.layers_text.size()) {
        size_t c = o.layers_text.find(',', at);
        if (c == std::string::npos) c = o.layers_text.size();
        const std::string v = o.layers_text.substr(at, c - at);
        char* end = nullptr;
        const long id = strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || id < 0 || id > n_layer)
            fail("--layers %s: '%s' is not a layer id of this model (0..%d)", o.layers_text.c_str(), v.c_str(),
                 n_layer);
        ids.push_back((int32_t)id);
        at = c + 1;
    }
    if (ids.size() != 3)
        fail("--layers %s: EAGLE-3 reads exactly 3 layers, e.g. --layers 2,15,27", o.layers_text.c_str());
    return ids;
}

// ids/logp[k]: the k likeliest tokens (ties: lower id first) and their log-softmax over the whole vocabulary.
void top_logprobs(const float* logits, int n_vocab, int k, int32_t* ids, float* logp) {
    std::vector<std::pair<float, int32_t>> heap;  // min-heap of the best k: (logit, -id) so lower ids win ties
    heap.reserve(k + 1);
    float mx = -INFINITY;
    for (int i = 0; i < n_vocab; i++) mx = std::max(mx, logits[i]);
    double sum = 0;
    auto worse = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) { return a > b; };
    for (int i = 0; i < n_vocab; i++) {
        const float l = logits[i];
        sum += std::exp((double)l - mx);
        if ((int)heap.size() < k) {
            heap.push_back({l, -i});
            std::push_heap(heap.begin(), heap.end(), worse);
        } else if (l > heap.front().first) {
            std::pop_heap(heap.begin(), heap.end(), worse);
            heap.back() = {l, -i};
            std::push_heap(heap.begin(), heap.end(), worse);
        }
    }
    std::sort(heap.begin(), heap.end(), [](const auto& a, const auto& b) { return a > b; });
    const double lse = mx + std::log(sum);
    for (int j = 0; j < k; j++) {
        ids[j] = -heap[j].second;
        logp[j] = (float)(heap[j].first - lse);
    }
}

// One prompt being answered in sequence `seq`.
struct Slot {
    const Prompt* prompt = nullptr;  // nullptr: idle
    std::unique_ptr<Sampler> sampler;
    TrainSequence data;
    int n_decoded = 0;  // rows of data.tokens already decoded
    bool last = false;  // the response is complete: its last token is the only row left to decode
};

class Dumper {
public:
    Dumper(Engine& eng, const TrainDataOptions& o, std::vector<int32_t> layers, TrainDataWriter& writer)
        : eng_(eng),
          tok_(eng.model().tokenizer()),
          o_(o),
          layers_(std::move(layers)),
          writer_(writer),
          slots_(o.n_parallel) {}

    void run(const std::vector<Prompt>& prompts) {
        std::vector<const Prompt*> todo;
        for (const Prompt& p : prompts)
            if (!writer_.done_prompts().count(p.index)) todo.push_back(&p);
        BEE_LOG_INFO("train-data: %zu prompts to answer (%zu done before), %d at once", todo.size(),
                     prompts.size() - todo.size(), o_.n_parallel);
        size_t next = 0, done = 0;
        const double t0 = time_ms();
        double t_log = t0;
        int64_t rows = 0;
        while (true) {
            for (size_t s = 0; s < slots_.size(); s++)
                if (!slots_[s].prompt && next < todo.size()) start(s, *todo[next++]);
            Batch b;
            b.capture_layers = layers_;
            for (size_t s = 0; s < slots_.size(); s++) {
                Slot& sl = slots_[s];
                if (!sl.prompt) continue;
                for (int r = sl.n_decoded; r < (int)sl.data.tokens.size(); r++)
                    b.add(sl.data.tokens[r], r, (int)s, true);
            }
            if (b.size() == 0) break;
            DecodeOutput out;
            eng_.decode(b, out);
            int row = 0;
            for (size_t s = 0; s < slots_.size(); s++) {
                if (!slots_[s].prompt) continue;
                const int n = (int)slots_[s].data.tokens.size() - slots_[s].n_decoded;
                rows += n;
                if (advance(s, out, row, n)) done++;
                row += n;
            }
            const double now = time_ms();
            if (now - t_log > 15000 || (next == todo.size() && b.size() == 0)) {
                t_log = now;
                const double rate = rows * 1000.0 / (now - t0);
                BEE_LOG_INFO("train-data: %zu/%zu prompts answered, %lld rows (%.1f rows/s), %d shards written", done,
                             todo.size(), (long long)rows, rate, writer_.n_shards());
            }
        }
        writer_.finish();
        BEE_LOG_INFO("train-data: done: %zu prompts, %lld rows in %.0f s; %lld rows in %d shards in %s", done,
                     (long long)rows, (time_ms() - t0) / 1000.0, (long long)writer_.rows_written(), writer_.n_shards(),
                     o_.out.c_str());
        if (n_clamped_)
            BEE_LOG_WARN("train-data: %lld hidden values were outside the float16 range and were clamped to +-65504",
                         (long long)n_clamped_);
    }

private:
    Engine& eng_;
    const Tokenizer& tok_;
    const TrainDataOptions& o_;
    std::vector<int32_t> layers_;
    TrainDataWriter& writer_;
    std::vector<Slot> slots_;
    int64_t n_clamped_ = 0;

    void start(size_t s, const Prompt& p) {
        Slot& sl = slots_[s];
        eng_.memory().clear((int)s);
        sl = Slot{};
        sl.prompt = &p;
        SamplingParams sp = with_vocab(o_.sampling, eng_.model());
        if (sp.seed != 0xFFFFFFFFu) sp.seed += (uint64_t)p.index;  // the same answer whatever the order
        sl.sampler = std::make_unique<Sampler>(sp, tok_.n_vocab());
        for (int32_t t : p.ids) sl.sampler->accept(t);
        sl.data.prompt_index = p.index;
        sl.data.prompt_text = p.text;
        sl.data.n_prompt = (int)p.ids.size();
        sl.data.tokens = p.ids;
    }

    // Records the slot's n rows (from `row` of the output), then samples its next token or finishes it.
    // Returns true when the sequence was handed to the writer.
    bool advance(size_t s, const DecodeOutput& out, int row, int n) {
        Slot& sl = slots_[s];
        const int k = o_.top_k, n_vocab = out.n_vocab;
        const size_t width = layers_.size() * (size_t)out.n_embd;
        for (int i = 0; i < n; i++) {
            const float* h = out.hidden_at(row + i, 0);  // (layers, n_embd), contiguous
            for (size_t j = 0; j < width; j++) {
                float v = h[j];
                if (!(std::fabs(v) <= 65504.0f)) {
                    n_clamped_++;
                    v = std::isnan(v) ? 0.0f : std::copysign(65504.0f, v);
                }
                sl.data.hidden.push_back(fp32_to_fp16(v));
            }
            const size_t at = sl.data.topk_ids.size();
            sl.data.topk_ids.resize(at + k);
            sl.data.topk_logp.resize(at + k);
            top_logprobs(out.logits_at(row + i), n_vocab, k, sl.data.topk_ids.data() + at,
                         sl.data.topk_logp.data() + at);
        }
        sl.n_decoded += n;
        if (sl.last) {
            const std::vector<int32_t> resp(sl.data.tokens.begin() + sl.data.n_prompt, sl.data.tokens.end());
            sl.data.response_text = tok_.decode(resp, false);
            writer_.add(std::move(sl.data));
            eng_.memory().clear((int)s);
            sl = Slot{};
            return true;
        }
        const int32_t t = sl.sampler->sample(out.logits_at(row + n - 1));
        sl.sampler->accept(t);
        sl.data.tokens.push_back(t);
        sl.data.eog = tok_.is_eog(t);
        const int n_resp = (int)sl.data.tokens.size() - sl.data.n_prompt;
        sl.last = sl.data.eog || n_resp >= o_.n_predict;
        return false;
    }
};

}  // namespace

int cmd_train_data(int argc, char** argv) {
    TrainDataOptions o;
    ArgParser p("bee train-data",
                "Answer a prompt set with the model through its chat template and write, for every position, the "
                "token, the hidden states entering the EAGLE-3 tap layers and the top-k log-probabilities (training "
                "data for tools/train-drafter).");
    add_model_options(p, o.model);
    add_sampling_options(p, o.sampling);
    p.str("--prompts", &o.prompts, "FILE", "prompts, one per line: text, or {\"prompt\": ...} / {\"messages\": [...]}");
    p.str("-o,--out", &o.out, "DIR", "folder for manifest.json and the .npy shards");
    p.i32("-n,--n-predict", &o.n_predict, "most tokens per response [256]", 1, 1 << 20);
    p.i32("--top-logprobs", &o.top_k, "next-token log-probabilities kept per position [32]", 1, 1024);
    p.str("--layers", &o.layers_text, "A,B,C", "layer ids whose input is captured [2,L/2,L-3]");
    p.i32("-np,--parallel", &o.n_parallel, "prompts answered at once [4]", 1, 256);
    p.i32("--shard-size", &o.shard_size, "sequences per shard (a resumed run redoes at most one shard) [64]", 1,
          1 << 20);
    p.i32("--max-prompts", &o.max_prompts, "use only the first N prompts of the file [all]", 1, INT32_MAX);
    p.str("--system", &o.system, "TEXT", "system message before each prompt (JSON lines may set their own)");
    p.str("--chat-template-file", &o.template_file, "FILE", "Jinja chat template to use instead of the model's");
    p.str("--chat-template", &o.template_name, "NAME", "built-in chat template: chatml or gemma");
    p.flag("--resume", &o.resume, "continue the dump in --out (same settings), skipping the prompts it holds");
    p.str("--eval-head", &o.eval.head, "HEAD",
          "instead of dumping: load this EAGLE-3 head or DFlash drafter against -m and measure its teacher-forced "
          "acceptance per depth on the dump in --data");
    p.str("--data", &o.eval.data, "DIR", "--eval-head: the dump to measure on");
    p.i32("--depth", &o.eval.depth, "--eval-head: longest draft chain (DFlash: at most block size - 1) [7]", 1, 64);
    p.i32("--holdout", &o.eval.holdout,
          "--eval-head: only prompts with index % N == N-1 (train_drafter.py holds out N=20) [0: all]", 0, 1 << 20);
    p.i32("--max-sequences", &o.eval.max_sequences, "--eval-head: stop after N sequences [all]", 1, INT32_MAX);
    p.flag("--json", &o.eval.json, "--eval-head: also print the figures as one JSON line");
    try {
        if (!p.parse(argc, argv)) return 0;
        if (o.model.model.empty()) fail("no model given (use -m FILE)");
        if (!o.eval.head.empty() && o.eval.data.empty())
            fail("--eval-head needs --data DIR (a dump of bee train-data)");
        if (o.eval.head.empty() && o.prompts.empty()) fail("no prompt file given (use --prompts FILE)");
        if (o.eval.head.empty() && o.out.empty()) fail("no output folder given (use -o DIR)");
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n\n%s", e.what(), p.usage().c_str());
        return 2;
    }
    try {
        if (!o.eval.head.empty()) {
            o.eval.model = o.model;
            return run_head_eval(o.eval);
        }
        std::unique_ptr<Model> model = load_model(o.model);
        BEE_LOG_INFO("model: %s", model->describe().c_str());
        const HParams& hp = model->hparams();
        const std::vector<int32_t> layers = capture_layers(o, hp.n_layer);
        const std::vector<Prompt> prompts = read_prompts(o, *model);
        size_t longest = 0;
        for (const Prompt& pr : prompts) longest = std::max(longest, pr.ids.size());
        const int per_seq = (int)longest + o.n_predict;
        if (per_seq > hp.n_ctx_train)
            fail("the longest prompt (%zu tokens) plus -n %d exceeds the model's context (%d): lower -n", longest,
                 o.n_predict, hp.n_ctx_train);
        EngineParams ep = engine_params(o.model);
        ep.n_seq_max = o.n_parallel;
        ep.kv_split = true;
        ep.n_ctx = std::max(o.model.n_ctx, o.n_parallel * per_seq);
        Engine eng(*model, ep);
        if (o.top_k > hp.n_vocab) fail("--top-logprobs %d exceeds the vocabulary (%d)", o.top_k, hp.n_vocab);
        const nlohmann::json settings = {{"model", o.model.model},   {"n_vocab", hp.n_vocab},
                                         {"n_embd", hp.n_embd},      {"n_layer", hp.n_layer},
                                         {"layers", layers},         {"top_k", o.top_k},
                                         {"prompts", o.prompts},     {"system", o.system},
                                         {"n_predict", o.n_predict}, {"temp", o.sampling.temp},
                                         {"seed", o.sampling.seed}};
        TrainDataWriter writer(o.out, settings, (int)layers.size(), hp.n_embd, o.top_k, o.shard_size, o.resume);
        BEE_LOG_INFO(
            "train-data: layers [%d, %d, %d], top %d log-probs, %zu prompts (longest %zu tokens), -n %d, "
            "context %d, %d threads",
            layers[0], layers[1], layers[2], o.top_k, prompts.size(), longest, o.n_predict, eng.params().n_ctx,
            eng.params().n_threads);
        Dumper(eng, o, layers, writer).run(prompts);
        return 0;
    } catch (const Error& e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}

}  // namespace bee
