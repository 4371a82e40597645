// spec/drafter_file: what the drafter files that read a target's hidden states (EAGLE-3 heads, DFlash
// drafters) share — the facts of the target a file is checked against, the compact draft vocabulary
// (`d2t`) and the tensors a file may borrow from the target.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/repack.h"
#include "model/weights.h"

namespace bee {

class GgufFile;
class Model;

struct DrafterTarget {
    std::string name;  // for messages (the target's file)
    int n_embd = 0;    // hidden size
    int n_vocab = 0;
    int n_layer = 0;  // captured layer ids may be 0..n_layer (n_layer: the final state before the norm)
    Weight tok_embd;  // (n_vocab, n_embd)
    Weight output;    // (n_vocab, n_embd)
};
DrafterTarget drafter_target_of(const Model& target);

// How a loader names its file in messages: `what` ("head", "drafter") and the format's converter hint.
struct DrafterFileKind {
    const char* what;
    const char* format;       // "eagle3", "dflash"
    const char* reconvert;    // appended to the d2t type message: how to get a file in the current layout
    const char* wrong_vocab;  // appended to the out-of-range id message: the likely cause
};

// d2t: I64 absolute target ids of the compact draft vocabulary; empty if the file has none.
std::vector<int32_t> read_d2t(const GgufFile& f, const DrafterTarget& t, const DrafterFileKind& k);

// The file's tensor `name`, or the target's in its place when the file has none — only if the widths agree.
Weight own_or_target(const GgufFile& f, const char* name, int64_t ne0, int64_t ne1, const Weight& target,
                     const DrafterTarget& t, const DrafterFileKind& k);

// One of a drafter file's own matrices into the layout the active ISA's matmul reads fastest, as the target's
// are at load (model/model_load): the same bits (kernels/repack.h), at the speed of the target's own matmuls.
// Read in place, the GGUF copy cost the tile kernel ~6x per byte (an EAGLE-3 head step: 2.0 ms, repacked
// 0.14 ms). `store` keeps the repacked bytes; a matrix that is not in GGUF layout, or has no repacked form,
// stays as it is.
void repack_own(Weight& m, std::vector<AlignedBytes>& store);

}  // namespace bee
