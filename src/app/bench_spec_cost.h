// app/bench_spec_cost: the verify cost curve for `bee bench spec --cost-curve K` — time of one decode of
// 1 + k rows relative to a one-row decode, after a real prompt.
#pragma once
#include <cstdint>
#include <cstdio>
#include <vector>

#include "model/engine.h"

namespace bee {

struct VerifyCost {
    int k = 0;          // draft rows besides the last sampled token
    double ms = 0;      // median decode time (wall clock)
    double cpu_ms = 0;  // median CPU time of the process during the decode (every thread)
};

// Prefills `prompt` into sequence 0 of a cleared cache, then times decodes of 1 + k rows (k = 0..k_max,
// every row asking for logits) at the position after it, alternating k within each of `reps`
// repetitions; the cache is cleared afterwards. Throws Error if the rows do not fit.
std::vector<VerifyCost> measure_verify_cost(Engine& eng, const std::vector<int32_t>& prompt, int k_max, int reps);

// CPU time of the whole process (every thread), ms: on a loaded machine it tracks the work done better
// than the wall clock, which also counts the time other processes held the cores.
double process_cpu_ms();

// To `f` as a markdown table (stderr when stdout carries JSON).
void print_verify_cost(FILE* f, const std::vector<VerifyCost>& curve, size_t prompt_tokens, int reps);

}  // namespace bee
