// runtime/slot_save: llama-server's slot actions — save a slot's cached tokens and KV cells to a file,
// restore them into a slot, or erase the slot's cache. They run on the inference thread between steps
// (Task::slot_action); the file format is kv/kv_state's, whose header names the model and the KV
// layout so a file from another model or KV type is refused with a clear error, never loaded.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/seq_memory.h"

namespace bee::runtime {

struct SlotActionResult {
    int32_t n_tokens = 0;  // tokens saved / restored / erased
    size_t n_bytes = 0;    // file bytes written / read
    double ms = 0;
};

// llama-server's rule for slot file names: a plain file name in --slot-save-path — not empty, at most
// 255 bytes, no path separators, no "..", no control characters, no ':' and no leading or trailing blank.
bool valid_slot_filename(const std::string& name);

// The text stored in (and compared against) a slot file's header to identify the model.
std::string slot_model_tag(const std::string& model_description, int32_t n_vocab);

// `cache`: the tokens whose K/V sit in sequence `seq` (the slot's prompt cache), position i = cache[i].
SlotActionResult slot_save(const SeqMemory& mem, int seq, const std::vector<int32_t>& cache, const std::string& path,
                           const std::string& model_tag);
// Replaces the slot's cache with the file's. Throws Error, leaving the slot untouched, if the file is
// unreadable, from another model or KV layout, or larger than the slot's context; if the cache has no
// room for it (unified KV), the slot is left empty and Error is thrown.
SlotActionResult slot_restore(SeqMemory& mem, int seq, std::vector<int32_t>& cache, int32_t n_ctx_slot,
                              const std::string& path, const std::string& model_tag);
SlotActionResult slot_erase(SeqMemory& mem, int seq, std::vector<int32_t>& cache);

}  // namespace bee::runtime
