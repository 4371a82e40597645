// tests/unit/runtime/test_scheduler_memory: the runtime without HTTP on SmolLM2, once with the normal
// sequence memory and once with CutPolicy::checkpoints (the recurrent rules: no cut in the middle, no
// moved ranges, no pruned tree rows). Prefix reuse, context shift and speculative rollback then run
// through their fall-backs (re-process the prompt, re-decode the shortened text, cut back to the verify
// batch and decode the accepted path again) and must give the same tokens as the normal path.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model/engine.h"
#include "model/model.h"
#include "runtime/scheduler.h"
#include "smollm_test.h"

namespace bee::runtime {
namespace {

struct Result {
    std::vector<int32_t> tokens;
    FinishInfo fin;
};

class SchedulerMemory : public WithSmolLM<::testing::Test> {
protected:
    // One slot, greedy; `spec_types` empty: no speculation.
    void start(CutPolicy policy, int n_ctx, const std::vector<std::string>& spec_types = {}, int suffix_tree = 0,
               bool context_shift = false) {
        sched_.reset();
        EngineParams ep;
        ep.n_ctx = n_ctx;
        ep.n_threads = 2;
        ep.cut_policy = policy;
        eng_ = std::make_unique<Engine>(*model_, ep);
        SchedulerParams sp;
        sp.n_parallel = 1;
        sp.context_shift = context_shift;
        sp.spec.types = spec_types;
        sp.spec.suffix_tree_nodes = suffix_tree;
        sp.spec.draft_n_ctx = n_ctx;
        sp.spec.draft_n_threads = 2;
        sched_ = std::make_unique<Scheduler>(*eng_, sp);
    }

    Result run(const std::vector<int32_t>& prompt, int n_predict, int32_t n_keep = 0, int32_t n_discard = 0) {
        auto t = std::make_shared<Task>();
        t->id = ++next_id_;
        t->prompt = prompt;
        t->params.sampling.temp = 0;
        t->params.n_predict = n_predict;
        t->params.ignore_eos = true;
        t->params.n_keep = n_keep;
        t->params.n_discard = n_discard;
        sched_->submit(t);
        Result r;
        for (bool done = false; !done;) {
            std::vector<TaskEvent> evs;
            t->channel->pop_all(evs, 1000);
            for (TaskEvent& e : evs) {
                for (const TokenInfo& ti : e.tokens) r.tokens.push_back(ti.id);
                if (e.kind == TaskEvent::error) ADD_FAILURE() << "task failed: " << e.error_message;
                if (e.kind != TaskEvent::delta) {
                    r.fin = e.finish;
                    done = true;
                }
            }
        }
        return r;
    }

    std::vector<int32_t> encode(const std::string& text) const { return model_->tokenizer().encode(text, true, true); }

    std::unique_ptr<Engine> eng_;
    std::unique_ptr<Scheduler> sched_;
    uint64_t next_id_ = 0;
};

// A second prompt sharing most of the first one's tokens: the normal memory keeps the shared prefix, the
// checkpoint memory can only keep what its cut points allow and processes the rest again.
TEST_F(SchedulerMemory, PrefixReuseFallsBackToReprocessing) {
    const std::vector<int32_t> a =
        encode("The history of the lighthouse begins on a rocky coast where ships were lost.");
    std::vector<int32_t> b(a.begin(), a.end() - 4);
    for (int32_t t : encode(" Sailors told stories about it")) b.push_back(t);
    Result out[2][2];
    const CutPolicy policies[2] = {CutPolicy::any, CutPolicy::checkpoints};
    for (int p = 0; p < 2; p++) {
        start(policies[p], 512);
        out[p][0] = run(a, 16);
        out[p][1] = run(b, 16);
    }
    EXPECT_EQ(out[0][0].tokens, out[1][0].tokens);
    EXPECT_EQ(out[0][1].tokens, out[1][1].tokens);
    EXPECT_EQ(out[0][1].fin.n_cached, (int32_t)a.size() - 4);   // the shared prefix
    EXPECT_LT(out[1][1].fin.n_cached, out[0][1].fin.n_cached);  // no cut in the middle of the last batch
}

// Context shift without moving keys: the shortened text is decoded again, so the tokens after the shift
// are exactly a fresh request's on that text.
TEST_F(SchedulerMemory, ContextShiftFallsBackToReDecoding) {
    constexpr int kCtx = 96, kDiscard = 30;
    start(CutPolicy::checkpoints, kCtx, {}, 0, true);
    const std::vector<int32_t> pt = encode("Write a long story about a lighthouse keeper.");
    const int n = kCtx - (int)pt.size();  // gen[n] is sampled when the context fills up
    const Result r = run(pt, n + 12, -1, kDiscard);
    ASSERT_EQ((int)r.tokens.size(), n + 12);
    EXPECT_TRUE(r.fin.truncated);
    start(CutPolicy::checkpoints, kCtx);
    EXPECT_EQ(run(pt, n).tokens, std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + n));
    std::vector<int32_t> shortened = pt;  // what the cache holds after the shift, plus gen[n]
    shortened.insert(shortened.end(), r.tokens.begin() + kDiscard, r.tokens.begin() + n + 1);
    const Result fresh = run(shortened, 11);
    EXPECT_EQ(fresh.tokens, std::vector<int32_t>(r.tokens.begin() + n + 1, r.tokens.end()));
}

// Speculative rollback: rejected draft rows cannot be cut off, so the sequence is cut back to the verify
// batch's start and the accepted path decoded again; chains and trees stay lossless.
TEST_F(SchedulerMemory, SpeculativeRollbackFallsBackToReDecoding) {
    const std::vector<std::string> texts = {"1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2,",
                                            "def f(x):\n    return x + 1\n\ndef g(x):\n    return x + 2\n\ndef h(x):\n",
                                            "Roses are red, violets are blue. Roses are red, violets are"};
    std::vector<Result> plain;
    start(CutPolicy::any, 512);
    for (const std::string& t : texts) plain.push_back(run(encode(t), 48));
    for (int tree : {0, 8}) {
        start(CutPolicy::checkpoints, 512, {"suffix"}, tree);
        int64_t drafted_n = 0, accepted_n = 0;
        for (size_t i = 0; i < texts.size(); i++) {
            const Result drafted = run(encode(texts[i]), 48);
            EXPECT_EQ(drafted.tokens, plain[i].tokens) << "suffix tree " << tree << ", prompt " << i;
            drafted_n += drafted.fin.draft_n;
            accepted_n += drafted.fin.draft_n_accepted;
        }
        EXPECT_GT(accepted_n, 10) << "suffix tree " << tree;
        EXPECT_GT(drafted_n, accepted_n) << "no rejected draft: the fall-back did not run";
    }
}

}  // namespace
}  // namespace bee::runtime
