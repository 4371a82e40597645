// model/arch/arch: what one architecture file provides (hparams + tensor binding, one layer's forward)
// and the table from general.architecture to those functions. Names of architectures appear only
// under model/arch/.
#pragma once
#include <string>

#include "gguf/gguf.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace bee {

struct ArchDef {
    const char* name;  // general.architecture
    // Reads hparams from `<name>.*` keys and binds tensors; throws Error naming file and key/tensor.
    void (*load)(const GgufFile& f, HParams& hp, ModelWeights& w);
    // Runs layer il over the ubatch: ctx.x (n_rows, n_embd) is updated in place.
    void (*forward_layer)(ForwardCtx& ctx, int il);
};

// nullptr if the architecture is not supported.
const ArchDef* find_arch(const std::string& name);
// Comma-separated list of supported names (for error messages).
std::string supported_archs();

}  // namespace bee
