// tests/unit/runtime/test_qwen35_runtime: the runtime on the tiny hybrid qwen35 model (recurrent layers):
// greedy output with speculation equals output without it, alone and with 4 slots sharing batches (drafts
// of the same model, whose f16 K/V differ slightly from the target's q4_0, so some are rejected and rolled
// back through the recurrent state's exact cuts; model-free drafters, tree drafts cut to chains); prefix
// reuse gives a cold prompt's output; context shift and draft trees are refused at start-up with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/engine.h"
#include "model/model.h"
#include "runtime/scheduler.h"

namespace bee::runtime {
namespace {

struct Result {
    std::vector<int32_t> tokens;
    FinishInfo fin;
};

// Checkpoints and the RAM prompt cache (--ctx-checkpoints, --checkpoint-every-n-tokens, --cache-ram) with
// prompts processed in batches of n_batch rows.
struct Memory {
    int ctx_checkpoints = 32, checkpoint_every = 8192, n_batch = 2048;
    size_t cache_ram = 0;
};

class Qwen35Runtime : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (std::filesystem::exists(BEE_QWEN35_TINY)) model_ = Model::load(BEE_QWEN35_TINY).release();
    }
    static void TearDownTestSuite() {
        delete model_;
        model_ = nullptr;
    }
    void SetUp() override {
        if (!model_) GTEST_FAIL() << BEE_QWEN35_TINY << " is missing: ctest makes it (fixture qwen35_tiny_model)";
    }

    // kv: the target's K/V type. With q4_0 the target's logits differ a little from those of the draft
    // model (the same file, f16 K/V), so its drafts are sometimes rejected.
    void start(int n_slots, const std::vector<std::string>& spec_types = {}, GgmlType kv = GgmlType::Q4_0,
               int n_ctx = 1024, const Memory& mem = Memory()) {
        sched_.reset();
        EngineParams ep;
        ep.ctx_checkpoints = mem.ctx_checkpoints;
        ep.checkpoint_every_n = mem.checkpoint_every;
        ep.n_ctx = n_ctx;
        ep.n_threads = 2;
        ep.type_k = ep.type_v = kv;
        ep.n_seq_max = n_slots;
        ep.kv_split = true;
        eng_ = std::make_unique<Engine>(*model_, ep);
        SchedulerParams sp;
        sp.n_parallel = n_slots;
        sp.spec.types = spec_types;
        sp.spec.draft_n_ctx = n_ctx;
        sp.spec.draft_n_threads = 2;
        sp.spec.draft_model = BEE_QWEN35_TINY;  // used by the "draft" type
        sp.n_batch = mem.n_batch;
        sp.cache_ram_bytes = mem.cache_ram;
        sched_ = std::make_unique<Scheduler>(*eng_, sp);
    }

    std::shared_ptr<Task> submit(const std::vector<int32_t>& prompt, int n_predict) {
        auto t = std::make_shared<Task>();
        t->id = ++next_id_;
        t->prompt = prompt;
        t->params.sampling.temp = 0;
        t->params.n_predict = n_predict;
        t->params.ignore_eos = true;
        sched_->submit(t);
        return t;
    }
    static Result wait(Task& t) {
        Result r;
        for (bool done = false; !done;) {
            std::vector<TaskEvent> evs;
            t.channel->pop_all(evs, 1000);
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
    Result run(const std::vector<int32_t>& prompt, int n_predict) { return wait(*submit(prompt, n_predict)); }

    static Model* model_;
    std::unique_ptr<Engine> eng_;
    std::unique_ptr<Scheduler> sched_;
    uint64_t next_id_ = 0;
};
Model* Qwen35Runtime::model_ = nullptr;

// Prompts with repeats for the model-free drafters to find: a repeated pattern, a repeated pair of
// phrases, and the start of the tiny model's own greedy loop (its output repeats itself).
std::vector<std::vector<int32_t>> prompts() {
    std::vector<std::vector<int32_t>> p(3);
    for (int r = 0; r < 6; r++)
        for (int32_t t : {1000, 2000, 3000, 4000, 5000}) p[0].push_back(t);
    for (int r = 0; r < 4; r++)
        for (int32_t t : {17, 9000, 9001, 9002, 17, 12000, 12001}) p[1].push_back(t);
    for (int i = 0; i < 12; i++) p[2].push_back(300 + 37 * i);
    return p;
}

TEST_F(Qwen35Runtime, SpeculationGivesTheSameTokens) {
    const auto ps = prompts();
    start(1);
    std::vector<Result> plain;
    for (const auto& p : ps) plain.push_back(run(p, 40));
    for (const std::vector<std::string>& types : {std::vector<std::string>{"draft"},
                                                  {"ngram-mod"},
                                                  {"suffix"},
                                                  {"recycle"},
                                                  {"ngram-simple", "suffix"},
                                                  {"draft-mtp"},
                                                  {"ngram-mod", "draft-mtp"}}) {
        start(1, types);
        int64_t drafted = 0, accepted = 0;
        for (size_t i = 0; i < ps.size(); i++) {
            const Result r = run(ps[i], 40);
            EXPECT_EQ(r.tokens, plain[i].tokens) << types[0] << ", prompt " << i;
            drafted += r.fin.draft_n;
            accepted += r.fin.draft_n_accepted;
        }
        if (types[0] == "draft") {  // random weights: only the model itself predicts them
            EXPECT_GT(accepted, 20);
            EXPECT_GT(drafted, accepted) << "no draft was rejected: the rollback did not run";
        }
        if (types.back() == "draft-mtp") {
            EXPECT_GT(drafted, 30) << "the MTP head drafted nothing";
        }
    }
}

// Four slots decoding together, their verify batches in one decode: each slot's output is its own plain one.
TEST_F(Qwen35Runtime, FourSlotsWithSpeculation) {
    const auto ps = prompts();
    start(1);
    std::vector<Result> plain;
    for (const auto& p : ps) plain.push_back(run(p, 32));
    plain.push_back(plain[0]);
    start(4, {"draft"});
    std::vector<std::shared_ptr<Task>> tasks;
    for (size_t i = 0; i < 4; i++) tasks.push_back(submit(ps[i % ps.size()], 32));
    int64_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < 4; i++) {
        const Result r = wait(*tasks[i]);
        EXPECT_EQ(r.tokens, plain[i].tokens) << "slot task " << i;
        drafted += r.fin.draft_n;
        accepted += r.fin.draft_n_accepted;
    }
    EXPECT_GT(accepted, 0);
    EXPECT_GT(drafted, accepted);
}

// The MTP block drafting for 4 slots that share batches (each slot's head follows its own sequence), and
// chosen by itself when no type is given (auto_mtp, as the command line sets it without --spec-type).
TEST_F(Qwen35Runtime, MtpFourSlotsAndAutoSelection) {
    const auto ps = prompts();
    start(1);
    std::vector<Result> plain;
    for (const auto& p : ps) plain.push_back(run(p, 24));
    start(4, {"draft-mtp", "ngram-mod"});
    std::vector<std::shared_ptr<Task>> tasks;
    for (size_t i = 0; i < 4; i++) tasks.push_back(submit(ps[i % ps.size()], 24));
    int64_t drafted = 0;
    for (size_t i = 0; i < 4; i++) {
        const Result r = wait(*tasks[i]);
        EXPECT_EQ(r.tokens, plain[i % ps.size()].tokens) << "slot task " << i;
        drafted += r.fin.draft_n;
    }
    EXPECT_GT(drafted, 0);
    sched_.reset();
    SchedulerParams sp;
    sp.n_parallel = 1;
    sp.spec.auto_mtp = true;  // no types: the scheduler adds draft-mtp for a model with an MTP block
    sp.spec.draft_n_ctx = 1024;
    sp.spec.draft_n_threads = 2;
    sched_ = std::make_unique<Scheduler>(*eng_, sp);
    const Result r = run(ps[2], 24);
    EXPECT_EQ(r.tokens, plain[2].tokens);
    EXPECT_GT(r.fin.draft_n, 0);
}

// A second prompt sharing a prefix: the memory keeps what it can cut exactly, the rest is decoded again,
// and the output equals a cold start's.
TEST_F(Qwen35Runtime, PrefixReuseGivesTheColdOutput) {
    const auto ps = prompts();
    std::vector<int32_t> b(ps[0].begin(), ps[0].end() - 3);
    b.push_back(777);
    b.push_back(778);
    start(1);
    run(ps[0], 8);
    const Result warm = run(b, 16);
    start(1);
    const Result cold = run(b, 16);
    EXPECT_EQ(warm.tokens, cold.tokens);
    EXPECT_EQ(warm.fin.n_cached, (int32_t)ps[0].size() - 3);  // a cut inside the first prompt's batch
    EXPECT_EQ(cold.fin.n_cached, 0);
}

// Prompts of distinct ids (the tiny model's vocabulary is 32000).
std::vector<int32_t> long_prompt(int n, int32_t base) {
    std::vector<int32_t> p(n);
    for (int i = 0; i < n; i++) p[i] = base + (i * 131) % 9000;
    return p;
}

// --checkpoint-every-n-tokens: a prompt processed in batches of 32 rows keeps the state at 64, 128 and 192; a
// second prompt leaving it at 150, below the last batch's rows, restarts from 128 and gives the cold output.
// Without checkpoints it starts from 0.
TEST_F(Qwen35Runtime, PeriodicCheckpointsRestartALaterPrompt) {
    const std::vector<int32_t> a = long_prompt(200, 100);
    std::vector<int32_t> b(a.begin(), a.begin() + 150);
    for (int32_t t : {31000, 31001, 31002, 31003}) b.push_back(t);
    Memory mem;
    mem.checkpoint_every = 64;
    mem.n_batch = 32;
    start(1, {}, GgmlType::Q4_0, 1024, mem);
    run(a, 4);
    EXPECT_EQ(eng_->memory().checkpoints(0), (std::vector<int32_t>{64, 128, 192}));
    const Result warm = run(b, 12);
    start(1, {}, GgmlType::Q4_0, 1024, mem);
    const Result cold = run(b, 12);
    EXPECT_EQ(warm.tokens, cold.tokens);
    EXPECT_EQ(warm.fin.n_cached, 128);
    EXPECT_EQ(cold.fin.n_cached, 0);
    mem.ctx_checkpoints = 0;
    start(1, {}, GgmlType::Q4_0, 1024, mem);
    run(a, 4);
    EXPECT_EQ(run(b, 12).fin.n_cached, 0);
}

// The checkpoint near a prompt's end travels with the slot's state into the RAM prompt cache: after another
// prompt took the slot, a prompt sharing the first one's first 98 tokens restarts at its checkpoint (96)
// and gives the cold output.
TEST_F(Qwen35Runtime, RamCacheCarriesTheCheckpointNearThePromptEnd) {
    const std::vector<int32_t> a = long_prompt(100, 200), other = long_prompt(100, 20000);
    std::vector<int32_t> b(a.begin(), a.begin() + 98);
    for (int32_t t : {31000, 31001, 31002}) b.push_back(t);
    Memory mem;
    mem.cache_ram = 64u << 20;
    start(1, {}, GgmlType::Q4_0, 1024, mem);
    run(a, 6);
    EXPECT_EQ(eng_->memory().checkpoints(0), (std::vector<int32_t>{96}));
    run(other, 6);
    const Result warm = run(b, 12);
    start(1, {}, GgmlType::Q4_0, 1024, mem);
    const Result cold = run(b, 12);
    EXPECT_EQ(warm.tokens, cold.tokens);
    EXPECT_EQ(warm.fin.n_cached, 96);
}

TEST_F(Qwen35Runtime, RefusesContextShiftAndDraftTrees) {
    EngineParams ep;
    ep.n_ctx = 256;
    ep.n_threads = 2;
    Engine eng(*model_, ep);
    SchedulerParams shift;
    shift.n_parallel = 1;
    shift.context_shift = true;
    try {
        Scheduler s(eng, shift);
        ADD_FAILURE() << "context shift accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("recurrent"), std::string::npos) << e.what();
    }
    SchedulerParams tree;
    tree.n_parallel = 1;
    tree.spec.types = {"suffix"};
    tree.spec.suffix_tree_nodes = 8;
    try {
        Scheduler s(eng, tree);
        ADD_FAILURE() << "a draft tree accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("tree"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace bee::runtime
