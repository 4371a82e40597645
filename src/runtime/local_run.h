// runtime/local_run: one task run to its end on a Scheduler from the calling thread — how the command-line
// front ends (`bee run`, `bee chat`, `bee bench spec`) drive the same runtime as `bee serve`.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/scheduler.h"

namespace bee::runtime {

struct LocalResult {
    std::vector<int32_t> tokens;  // generated token ids, without the end-of-generation token that stopped it
    std::string content, reasoning;
    FinishInfo finish;
};

// Submits `task` and waits for its end, calling on_delta for every delta event as it arrives (text to
// print as it is generated). Throws Error with the task's message if it ends with an error event.
LocalResult run_task(Scheduler& sched, std::shared_ptr<Task> task,
                     const std::function<void(const TaskEvent&)>& on_delta = {});

}  // namespace bee::runtime
