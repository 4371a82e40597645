// app/bench_spec: `bee bench spec` — speculative decoding speed-up and acceptance on a prompt set.
#pragma once

namespace bee {

int cmd_bench_spec(int argc, char** argv);

}  // namespace bee
