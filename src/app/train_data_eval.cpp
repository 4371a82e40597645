// app/train_data_eval: `bee train-data --eval-head HEAD --data DIR`: loads an EAGLE-3 head or a DFlash drafter
// against its target with the loader `--spec-type draft-eagle3` / `dflash` uses and measures on a dump of `bee
// train-data`, teacher forced, how many greedy draft tokens a chain would get accepted at each depth. EAGLE-3: from
// every boundary p of a response the head drafts depth 0 from (token p+1, features of p), then feeds its own pre-norm
// output with the next token deeper (specs/drafters.md §3.4). DFlash: the block [token p+1, mask × d] at position
// p+1 over the context of the target's features at 0..p (§2.2), which is exactly its draft at inference since the
// block never sees its own draws. Each draft is compared with the target's top-1 at that position.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "app/train_data_eval.h"
#include "base/error.h"
#include "base/fp16.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "model/model.h"
#include "spec/dflash/dflash_model.h"
#include "spec/eagle3/eagle3_head.h"
#include "spec/registry.h"

namespace bee {

namespace {

// A whole .npy file (format 1.0/2.0, little-endian, C order): its shape and its data bytes.
struct Npy {
    std::string bytes;
    size_t data_at = 0;
    std::string descr;
    std::vector<int64_t> shape;
    template <typename T>
    const T* data() const {
        return (const T*)(bytes.data() + data_at);
    }
};

Npy read_npy(const std::string& path, const char* descr, size_t n_dims) {
    Npy a;
    a.bytes = read_file(path);
    if (a.bytes.size() < 12 || memcmp(a.bytes.data(), "\x93NUMPY", 6) != 0)
        fail("%s is not a .npy file: is the dump complete? (run bee train-data --resume)", path.c_str());
    const unsigned char* b = (const unsigned char*)a.bytes.data();
    const size_t hlen = b[6] == 1 ? (size_t)(b[8] | b[9] << 8) : (size_t)(b[8] | b[9] << 8 | b[10] << 16 | b[11] << 24);
    a.data_at = (b[6] == 1 ? 10 : 12) + hlen;
    const std::string h = a.bytes.substr(b[6] == 1 ? 10 : 12, hlen);
    if (h.find(std::string("'descr': '") + descr + "'") == std::string::npos ||
        h.find("'fortran_order': False") == std::string::npos)
        fail("%s: expected a C-order %s array, the header is %s", path.c_str(), descr, h.c_str());
    size_t at = h.find("'shape': (");
    if (at == std::string::npos) fail("%s: no shape in the header %s", path.c_str(), h.c_str());
    at += 10;
    size_t expect = 1;
    while (at < h.size() && h[at] != ')') {
        char* end = nullptr;
        const long long v = strtoll(h.c_str() + at, &end, 10);
        if (end == h.c_str() + at) break;
        a.shape.push_back(v);
        expect *= (size_t)v;
        at = (size_t)(end - h.c_str());
        while (at < h.size() && (h[at] == ',' || h[at] == ' ')) at++;
    }
    const size_t elem = descr[2] == '2' ? 2 : 4;
    if (a.shape.size() != n_dims || a.bytes.size() < a.data_at + expect * elem)
        fail("%s: shape or size does not match its header (%s): the file is damaged", path.c_str(), h.c_str());
    return a;
}

int argmax(const float* x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

struct DepthStats {
    std::vector<int64_t> reached, accepted;
    int64_t boundaries = 0;
};

// The chains from every boundary of one sequence (rows [0, n), the first n_prompt the prompt).
void eval_sequence(const Eagle3Head& head, ThreadPool& pool, const float* feats, const int32_t* tokens,
                   const int32_t* top1, int n, int n_prompt, int depth, DepthStats& st) {
    const Eagle3HParams& hp = head.hparams();
    const int e = hp.n_embd, nd = hp.n_draft_vocab, m = n - 1;  // m rows: (token t+1, features of t)
    if (m < 2) return;
    std::vector<float> g((size_t)m * e), hidden((size_t)m * e), logits((size_t)m * nd);
    head.encode(pool, feats, m, g.data());
    std::vector<int32_t> pos(m);
    for (int t = 0; t < m; t++) pos[t] = t;
    Eagle3Kv kv0;
    head.decode(pool, kv0, {m, tokens + 1, pos.data(), g.data()}, hidden.data(), logits.data());
    std::vector<float> h(e), h_next(e), l(nd);
    // Boundary p drafts x[p+2+j] at depth j (compared with the target's top-1 at row p+1+j <= n-2).
    for (int p = std::max(0, n_prompt - 2); p + 2 <= n - 1; p++) {
        st.boundaries++;
        int32_t draft = head.target_id(argmax(logits.data() + (size_t)p * nd, nd));
        st.reached[0]++;
        if (draft != top1[p + 1]) continue;
        st.accepted[0]++;
        Eagle3Kv kv = kv0;
        kv.cut(p + 1);
        std::copy(hidden.begin() + (size_t)p * e, hidden.begin() + (size_t)(p + 1) * e, h.begin());
        for (int j = 1; j < depth && p + 1 + j <= n - 2; j++) {
            const int32_t tok = tokens[p + 1 + j], at = p + j;
            head.decode(pool, kv, {1, &tok, &at, h.data()}, h_next.data(), l.data());
            std::swap(h, h_next);
            draft = head.target_id(argmax(l.data(), nd));
            st.reached[j]++;
            if (draft != top1[p + 1 + j]) break;
            st.accepted[j]++;
        }
    }
}

// The blocks from every boundary of one sequence, in the same positions as eval_sequence: the block at anchor
// a = p+1 (last committed token x[a], the context the features of rows < a) drafts x[a+1+i] in row i.
void eval_dflash_sequence(const DflashModel& m, ThreadPool& pool, const float* feats, const int32_t* tokens,
                          const int32_t* top1, int n, int n_prompt, int depth, DepthStats& st) {
    const int nd = m.hparams().n_draft_vocab, width = m.hparams().n_features();
    const int n_draft = std::min(depth, m.hparams().block_size - 1);
    std::vector<float> logits((size_t)n_draft * nd);
    std::vector<int32_t> pos(n);
    for (int t = 0; t < n; t++) pos[t] = t;
    DflashContext ctx;
    int added = 0;
    for (int a = std::max(1, n_prompt - 1); a <= n - 2; a++) {
        m.add_context(pool, ctx, feats + (size_t)added * width, pos.data() + added, a - added);
        added = a;
        st.boundaries++;
        const DflashBlock b{&ctx, tokens[a], a, std::min(n_draft, n - 1 - a)};
        m.draft(pool, &b, 1, DflashModel::kDefaultCrossCtx, logits.data());
        for (int i = 0; i < b.n_draft; i++) {
            st.reached[i]++;
            if (m.target_id(argmax(logits.data() + (size_t)i * nd, nd)) != top1[a + i]) break;
            st.accepted[i]++;
        }
    }
}

// The columns of a dump row (its captured layers, in the dump's order) that make a drafter's feature row (its
// layers, in its order): the index in `dumped` of each of `wanted`.
std::vector<int> feature_columns(const std::vector<int32_t>& dumped, const std::vector<int32_t>& wanted,
                                 const std::string& data) {
    std::vector<int> cols;
    for (int32_t l : wanted) {
        const auto it = std::find(dumped.begin(), dumped.end(), l);
        if (it == dumped.end()) {
            std::string w;
            for (int32_t x : wanted) w += (w.empty() ? "" : ",") + std::to_string(x);
            fail("%s captured layers that do not include %d, which the drafter reads: dump again with --layers %s",
                 data.c_str(), l, w.c_str());
        }
        cols.push_back((int)(it - dumped.begin()));
    }
    return cols;
}

}  // namespace

int run_head_eval(const HeadEvalOptions& o) {
    std::unique_ptr<Model> model = load_model(o.model);
    const DrafterTarget target = drafter_target_of(*model);
    const std::string kind = drafter_kind_for_file(o.head).name;
    if (kind != "draft-eagle3" && kind != "dflash")
        fail(
            "%s is neither an EAGLE-3 head nor a DFlash drafter (general.architecture eagle3, dflash or "
            "dflash-draft): --eval-head measures those",
            o.head.c_str());
    std::unique_ptr<Eagle3Head> head;
    std::unique_ptr<DflashModel> dflash;
    std::vector<int32_t> reads;  // the target layers the drafter reads, in its order
    if (kind == "dflash") {
        dflash = DflashModel::load(o.head, target);
        const DflashHParams& hp = dflash->hparams();
        reads = hp.target_layers;
        BEE_LOG_INFO(
            "eval-head: %s: DFlash, %d layers, H %d, %d heads (%d kv) x %d, n_ff %d, block %d, draft "
            "vocabulary %d",
            o.head.c_str(), hp.n_layer, hp.n_embd, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_ff, hp.block_size,
            hp.n_draft_vocab);
    } else {
        head = Eagle3Head::load(o.head, target);
        const Eagle3HParams& hp = head->hparams();
        reads.assign(hp.target_layers.begin(), hp.target_layers.end());
        BEE_LOG_INFO("eval-head: %s: H %d, %d heads (%d kv) x %d, n_ff %d, draft vocabulary %d, layers [%d, %d, %d]%s",
                     o.head.c_str(), hp.n_embd, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_ff, hp.n_draft_vocab,
                     hp.target_layers[0], hp.target_layers[1], hp.target_layers[2],
                     hp.norm_before_fc ? ", norm before fc" : "");
    }
    const nlohmann::json man = nlohmann::json::parse(read_file(o.data + "/manifest.json"), nullptr, false);
    if (man.is_discarded() || !man.contains("settings") || !man.contains("shards"))
        fail("%s/manifest.json is not a manifest of bee train-data", o.data.c_str());
    const nlohmann::json& s = man["settings"];
    const std::vector<int32_t> layers = s["layers"].get<std::vector<int32_t>>();
    if (s["n_embd"].get<int>() != target.n_embd || s["n_vocab"].get<int>() != target.n_vocab)
        fail("%s was dumped from another model (n_embd %d, n_vocab %d)", o.data.c_str(), s["n_embd"].get<int>(),
             s["n_vocab"].get<int>());
    const std::vector<int> cols = feature_columns(layers, reads, o.data);
    const int depth = dflash ? std::min(o.depth, dflash->hparams().block_size - 1) : o.depth;  // a block's drafts
    ThreadPool pool(o.model.n_threads > 0 ? o.model.n_threads : default_thread_count());
    DepthStats st;
    st.reached.assign(depth, 0);
    st.accepted.assign(depth, 0);
    const size_t e = (size_t)target.n_embd, width = layers.size() * e, out_width = cols.size() * e;
    int n_seq = 0;
    const double t0 = time_ms();
    for (const nlohmann::json& sh : man["shards"]) {
        if (o.max_sequences > 0 && n_seq >= o.max_sequences) break;
        const Npy tok = read_npy(o.data + "/" + sh["tokens"].get<std::string>(), "<i4", 1);
        const Npy hid = read_npy(o.data + "/" + sh["hidden"].get<std::string>(), "<f2", 3);
        const Npy ids = read_npy(o.data + "/" + sh["topk_ids"].get<std::string>(), "<i4", 2);
        const int64_t k = ids.shape[1];
        for (const nlohmann::json& sq : sh["sequences"]) {
            if (o.max_sequences > 0 && n_seq >= o.max_sequences) break;
            if (o.holdout > 0 && sq["prompt"].get<int>() % o.holdout != o.holdout - 1) continue;
            const int64_t r0 = sq["row0"].get<int64_t>();
            const int n = sq["n_rows"].get<int>();
            if (r0 + n > tok.shape[0]) fail("%s: sequence rows past the end of its shard", sh["name"].dump().c_str());
            if (hid.shape[1] != (int64_t)layers.size() || hid.shape[2] != (int64_t)e)
                fail("%s: hidden rows are not (%zu, %zu) as the manifest says", sh["name"].dump().c_str(),
                     layers.size(), e);
            std::vector<float> feats((size_t)n * out_width);
            const fp16_t* src = hid.data<fp16_t>() + (size_t)r0 * width;
            for (int i = 0; i < n; i++)
                for (size_t j = 0; j < cols.size(); j++)
                    for (size_t x = 0; x < e; x++)
                        feats[i * out_width + j * e + x] = fp16_to_fp32(src[i * width + cols[j] * e + x]);
            std::vector<int32_t> top1(n);
            for (int i = 0; i < n; i++) top1[i] = ids.data<int32_t>()[(r0 + i) * k];
            if (dflash)
                eval_dflash_sequence(*dflash, pool, feats.data(), tok.data<int32_t>() + r0, top1.data(), n,
                                     sq["n_prompt"].get<int>(), depth, st);
            else
                eval_sequence(*head, pool, feats.data(), tok.data<int32_t>() + r0, top1.data(), n,
                              sq["n_prompt"].get<int>(), depth, st);
            n_seq++;
        }
    }
    if (st.boundaries == 0) fail("%s: no sequence to evaluate (check --holdout / --max-sequences)", o.data.c_str());
    nlohmann::json per_depth = nlohmann::json::array();
    double tau = 1.0;
    printf("depth  reached  accepted  rate    P(accepted >= depth+1)\n");
    for (int j = 0; j < depth; j++) {
        const double rate = st.reached[j] ? (double)st.accepted[j] / (double)st.reached[j] : 0.0;
        const double cum = (double)st.accepted[j] / (double)st.boundaries;
        tau += cum;
        printf("%5d  %7lld  %8lld  %.4f  %.4f\n", j, (long long)st.reached[j], (long long)st.accepted[j], rate, cum);
        per_depth.push_back({{"depth", j},
                             {"reached", st.reached[j]},
                             {"accepted", st.accepted[j]},
                             {"rate", rate},
                             {"cumulative", cum}});
    }
    printf("%d sequences, %lld boundaries: mean accepted length %.3f (chains of %d, with the bonus token) in %.1f s\n",
           n_seq, (long long)st.boundaries, tau, depth, (time_ms() - t0) / 1000.0);
    if (o.json)
        printf("%s\n", nlohmann::json({{"sequences", n_seq},
                                       {"boundaries", st.boundaries},
                                       {"mean_accepted_length", tau},
                                       {"depths", per_depth}})
                           .dump()
                           .c_str());
    return 0;
}

}  // namespace bee
