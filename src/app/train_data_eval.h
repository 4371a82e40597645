// app/train_data_eval: the teacher-forced acceptance of an EAGLE-3 head or a DFlash drafter on a `bee train-data`
// dump, measured with Bee's own loader and forward (`bee train-data --eval-head HEAD --data DIR`).
#pragma once
#include <string>

#include "app/args.h"

namespace bee {

struct HeadEvalOptions {
    ModelOptions model;  // the target (its token embedding / output stand in for the head's missing ones)
    std::string head, data;
    int32_t depth = 7;           // longest chain
    int32_t holdout = 0;         // > 0: only sequences whose prompt index % holdout == holdout - 1
    int32_t max_sequences = -1;  // > 0: stop after this many sequences
    bool json = false;           // also print one JSON line with the figures
};

// Prints acceptance per depth and the mean accepted length. Throws Error on a head that does not fit the target
// (the loader's message) or a damaged dump.
int run_head_eval(const HeadEvalOptions& o);

}  // namespace bee
