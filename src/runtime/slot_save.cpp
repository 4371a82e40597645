// runtime/slot_save: slot save / restore / erase (see the header).
#include "runtime/slot_save.h"

#include "base/error.h"
#include "base/timer.h"
#include "kv/kv_state.h"

namespace bee::runtime {

bool valid_slot_filename(const std::string& name) {
    if (name.empty() || name.size() > 255 || name == "." || name.find("..") != std::string::npos) return false;
    if (name.front() == ' ' || name.back() == ' ') return false;
    for (unsigned char c : name)
        if (c < 0x20 || c == 0x7f || c == '/' || c == '\\' || c == ':') return false;
    return true;
}

std::string slot_model_tag(const std::string& model_description, int32_t n_vocab) {
    return strfmt("%s, vocab %d", model_description.c_str(), n_vocab);
}

SlotActionResult slot_save(const SeqMemory& mem, int seq, const std::vector<int32_t>& cache, const std::string& path,
                           const std::string& model_tag) {
    const double t0 = time_ms();
    SeqFile f;
    f.model = model_tag;
    f.tokens = cache;
    f.state = mem.save(seq, (int32_t)cache.size());
    if (f.state.n_cells() != (int)cache.size())  // the slot's bookkeeping and its KV must agree
        fail("slot %d holds %zu cached tokens but %d KV cells", seq, cache.size(), f.state.n_cells());
    SlotActionResult r;
    r.n_tokens = (int32_t)cache.size();
    r.n_bytes = seq_file_write(path, f);
    r.ms = time_ms() - t0;
    return r;
}

SlotActionResult slot_restore(SeqMemory& mem, int seq, std::vector<int32_t>& cache, int32_t n_ctx_slot,
                              const std::string& path, const std::string& model_tag) {
    const double t0 = time_ms();
    SlotActionResult r;
    SeqFile f = seq_file_read(path, &r.n_bytes);
    if (f.model != model_tag)
        fail("slot file '%s' was saved with another model (%s); this server runs %s", path.c_str(), f.model.c_str(),
             model_tag.c_str());
    seq_state_check(mem.kv(), f.state, strfmt("slot file '%s'", path.c_str()).c_str());
    const int n = f.state.n_cells();
    if ((int)f.tokens.size() != n)
        fail("slot file '%s' holds %zu tokens but %d KV cells", path.c_str(), f.tokens.size(), n);
    for (int i = 0; i < n; i++)
        if (f.state.pos[i] != i)
            fail("slot file '%s': cell %d is at position %d (expected %d)", path.c_str(), i, f.state.pos[i], i);
    if (n >= n_ctx_slot)
        fail("slot file '%s' holds %d tokens; the slot's context is %d (start the server with a larger -c)",
             path.c_str(), n, n_ctx_slot);
    mem.clear(seq);
    cache.clear();
    if (!mem.load(seq, f.state))
        fail("no room in the KV cache to restore %d tokens from '%s' (other slots hold the cells)", n, path.c_str());
    cache = std::move(f.tokens);
    r.n_tokens = n;
    r.ms = time_ms() - t0;
    return r;
}

SlotActionResult slot_erase(SeqMemory& mem, int seq, std::vector<int32_t>& cache) {
    SlotActionResult r;
    r.n_tokens = (int32_t)cache.size();
    mem.clear(seq);
    cache.clear();
    return r;
}

}  // namespace bee::runtime
