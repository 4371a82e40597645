// runtime/local_run: submit one task and collect its events until done.
#include "runtime/local_run.h"

#include "base/error.h"

namespace bee::runtime {

LocalResult run_task(Scheduler& sched, std::shared_ptr<Task> task,
                     const std::function<void(const TaskEvent&)>& on_delta) {
    std::shared_ptr<TaskChannel> channel = task->channel;
    sched.submit(std::move(task));
    LocalResult r;
    std::vector<TaskEvent> events;
    for (;;) {
        events.clear();
        channel->pop_all(events, 1000);
        for (const TaskEvent& e : events) {
            if (e.kind == TaskEvent::error) fail("%s", e.error_message.c_str());
            for (const TokenInfo& t : e.tokens) r.tokens.push_back(t.id);
            r.content += e.content;
            r.reasoning += e.reasoning;
            if (e.kind == TaskEvent::done) {
                r.finish = e.finish;
                // The slot reports the end-of-generation token (llama-server counts it); the CLI output never had it.
                if (r.finish.stop_type == StopType::eos && !r.tokens.empty()) r.tokens.pop_back();
                return r;
            }
            if (on_delta && !e.has_progress) on_delta(e);
        }
    }
}

}  // namespace bee::runtime
