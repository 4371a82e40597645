// tests/unit/runtime/test_scheduler_observe: drafters observe what the target decoded for their own
// sequence when several slots share each step's batch — every prompt chunk and generation row of that
// slot, in decode order, with the hidden states they ask for, bit-identical to the same request run alone.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/engine.h"
#include "model/model.h"
#include "runtime/local_run.h"
#include "smollm_test.h"

namespace bee::runtime {
namespace {

struct Seen {
    int32_t token, pos;
    bool prefill;
    std::vector<float> hidden;  // final hidden state (layer n_layer)
};

// Never drafts; records every row it is shown.
class Recorder : public Drafter {
public:
    Recorder(int n_layer, std::vector<Seen>* out) : n_layer_(n_layer), out_(out) {}
    void draft(const DraftRequest&, DraftTree&) override {}
    int n_max() const override { return 1; }
    std::vector<int32_t> capture_layers() const override { return {n_layer_}; }
    void observe_target(const TargetRows& t) override {
        for (int i = 0; i < t.n; i++) {
            const float* h = t.hidden(i, 0);
            ASSERT_NE(h, nullptr);
            out_->push_back({t.token(i), t.pos(i), t.prefill, std::vector<float>(h, h + t.out.n_embd)});
        }
    }

private:
    int n_layer_;
    std::vector<Seen>* out_;
};

class SchedulerObserve : public WithSmolLM<::testing::Test> {
protected:
    // Runs `prompts` on n_slots slots at once (one task each); returns each slot's recorded rows.
    std::vector<std::vector<Seen>> run(const std::vector<std::string>& prompts, int n_slots) {
        EngineParams ep;
        ep.n_ctx = 1024;
        ep.n_threads = 2;
        ep.n_seq_max = n_slots;
        Engine eng(*model_, ep);
        std::vector<std::vector<Seen>> seen(n_slots);
        SchedulerParams sp;
        sp.n_parallel = n_slots;
        sp.n_batch = 16;  // prompts arrive in several chunks, interleaved with the other slots' rows
        sp.spec.types = {"ngram-simple"};
        const int n_layer = model_->hparams().n_layer;
        sp.extra_drafter = [&seen, n_layer](int slot) { return std::make_unique<Recorder>(n_layer, &seen[slot]); };
        Scheduler sched(eng, sp);
        std::vector<std::shared_ptr<Task>> tasks;
        for (size_t i = 0; i < prompts.size(); i++) {
            auto t = std::make_shared<Task>();
            t->id = i + 1;
            t->prompt = model_->tokenizer().encode(prompts[i], true, true);
            t->params.sampling.temp = 0;
            t->params.n_predict = 12;
            t->params.id_slot = (int32_t)i;
            tasks.push_back(t);
            sched.submit(t);
        }
        for (auto& t : tasks)  // wait for each task's end
            for (bool done = false; !done;) {
                std::vector<TaskEvent> evs;
                t->channel->pop_all(evs, 1000);
                for (const TaskEvent& e : evs) done = done || e.kind != TaskEvent::delta;
            }
        return seen;
    }
};

TEST_F(SchedulerObserve, EachSlotSeesItsOwnRowsInOrderLikeAlone) {
    const std::vector<std::string> prompts =
        {"The lighthouse keeper climbed the stairs every evening to light the lamp.",
         "Write a short poem about the sea and the wind."};
    const std::vector<std::vector<Seen>> together = run(prompts, 2);
    for (size_t i = 0; i < prompts.size(); i++) {
        const std::vector<Seen> alone = run({prompts[i]}, 1)[0];
        const std::vector<Seen>& mine = together[i];
        ASSERT_EQ(mine.size(), alone.size()) << "slot " << i;
        const size_t n_prompt = model_->tokenizer().encode(prompts[i], true, true).size();
        for (size_t r = 0; r < mine.size(); r++) {
            EXPECT_EQ(mine[r].pos, (int32_t)r) << "slot " << i << " row " << r;  // decode order, no gaps
            EXPECT_EQ(mine[r].prefill, r < n_prompt);
            EXPECT_EQ(mine[r].token, alone[r].token);
            EXPECT_EQ(0, memcmp(mine[r].hidden.data(), alone[r].hidden.data(), mine[r].hidden.size() * sizeof(float)))
                << "slot " << i << " row " << r << ": hidden state differs from the request run alone";
        }
    }
}

}  // namespace
}  // namespace bee::runtime
