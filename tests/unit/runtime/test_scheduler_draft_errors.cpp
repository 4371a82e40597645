// tests/unit/runtime/test_scheduler_draft_errors: a drafter that throws ends its own slot's request with a
// 500 error naming the failure, never the server: the other slot sharing the steps finishes, and the slot
// serves its next request. Covered: draft() while two slots plan their drafts together, and observe_target()
// after a decode.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/engine.h"
#include "model/model.h"
#include "runtime/local_run.h"
#include "smollm_test.h"

namespace bee::runtime {
namespace {

// Throws once, from draft() or from observe_target() at a generation row, then behaves (never drafts).
class Thrower : public Drafter {
public:
    Thrower(bool in_observe, std::atomic<int>* left) : in_observe_(in_observe), left_(left) {}
    void draft(const DraftRequest&, DraftTree&) override {
        if (!in_observe_ && (*left_)-- > 0) fail("test drafter: draft failed");
    }
    void observe_target(const TargetRows& t) override {
        if (in_observe_ && !t.prefill && (*left_)-- > 0) fail("test drafter: observe failed");
    }
    int n_max() const override { return 2; }

private:
    bool in_observe_;
    std::atomic<int>* left_;
};

struct Outcome {
    bool error = false;
    int http_status = 0;
    std::string message;
    int32_t n_predicted = 0;
};

class SchedulerDraftErrors : public WithSmolLM<::testing::TestWithParam<bool>> {
protected:
    static Outcome wait(const std::shared_ptr<Task>& t) {
        Outcome o;
        for (bool done = false; !done;) {
            std::vector<TaskEvent> evs;
            t->channel->pop_all(evs, 1000);
            for (const TaskEvent& e : evs) {
                if (e.kind == TaskEvent::error) {
                    o.error = true;
                    o.http_status = e.http_status;
                    o.message = e.error_message;
                }
                if (e.kind == TaskEvent::done) o.n_predicted = e.finish.n_predicted;
                done = done || e.kind != TaskEvent::delta;
            }
        }
        return o;
    }

    std::shared_ptr<Task> task(Scheduler& sched, int id, int slot, const char* prompt) {
        auto t = std::make_shared<Task>();
        t->id = id;
        t->prompt = model_->tokenizer().encode(prompt, true, true);
        t->params.sampling.temp = 0;
        t->params.n_predict = 10;
        t->params.ignore_eos = true;
        t->params.id_slot = slot;
        sched.submit(t);
        return t;
    }
};

TEST_P(SchedulerDraftErrors, OnlyTheSlotWhoseDrafterThrewFails) {
    const bool in_observe = GetParam();
    EngineParams ep;
    ep.n_ctx = 1024;
    ep.n_threads = 2;
    ep.n_seq_max = 2;
    Engine eng(*model_, ep);
    std::atomic<int> left{1}, none{0};  // slot 0's drafter throws once, slot 1's never
    SchedulerParams sp;
    sp.n_parallel = 2;
    sp.spec.types = {"ngram-simple"};  // nothing to copy in these prompts: the test drafter is asked
    sp.spec.depth.adaptive = false;
    sp.extra_drafter = [&](int slot) { return std::make_unique<Thrower>(in_observe, slot == 0 ? &left : &none); };
    Scheduler sched(eng, sp);
    const auto a = task(sched, 1, 0, "Describe a quiet harbour town at dawn.");
    const auto b = task(sched, 2, 1, "List three uses of copper.");
    const Outcome oa = wait(a), ob = wait(b);
    EXPECT_TRUE(oa.error);
    EXPECT_EQ(oa.http_status, 500);
    EXPECT_NE(oa.message.find(in_observe ? "observe failed" : "draft failed"), std::string::npos) << oa.message;
    EXPECT_NE(oa.message.find("speculative decoding failed"), std::string::npos) << oa.message;
    EXPECT_FALSE(ob.error) << ob.message;
    EXPECT_EQ(ob.n_predicted, 10);
    const Outcome again = wait(task(sched, 3, 0, "Describe a quiet harbour town at dawn."));
    EXPECT_FALSE(again.error) << again.message;
    EXPECT_EQ(again.n_predicted, 10);
}

INSTANTIATE_TEST_SUITE_P(Runtime, SchedulerDraftErrors, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Observe" : "Draft"; });

}  // namespace
}  // namespace bee::runtime
