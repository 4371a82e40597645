// kv/kv_state: sequence KV export/import through KvCache's public API (cells, rows, alloc).
#include "kv/kv_state.h"

#include <cstring>

#include "base/error.h"

namespace bee {

SeqState seq_state_export(const KvCache& kv, int seq, int32_t p1) {
    SeqState st;
    const KvCacheParams& p = kv.params();
    st.n_layer = p.n_layer;
    st.type_k = p.type_k;
    st.type_v = p.type_v;
    st.k_row_bytes = kv.k_row_bytes();
    st.v_row_bytes = kv.v_row_bytes();
    std::vector<std::pair<int32_t, int32_t>> cells;  // (pos, cell) ascending
    kv.seq_cells_sorted(seq, cells);
    if (p1 >= 0)
        while (!cells.empty() && cells.back().first >= p1) cells.pop_back();
    const size_t n = cells.size();
    for (const auto& [pos, c] : cells) st.pos.push_back(pos);
    st.k.resize((size_t)p.n_layer * n * st.k_row_bytes);
    st.v.resize((size_t)p.n_layer * n * st.v_row_bytes);
    for (int il = 0; il < p.n_layer; il++) {
        uint8_t* kd = st.k.data() + (size_t)il * n * st.k_row_bytes;
        uint8_t* vd = st.v.data() + (size_t)il * n * st.v_row_bytes;
        for (size_t i = 0; i < n; i++) {
            memcpy(kd + i * st.k_row_bytes, kv.k_data(il) + (size_t)cells[i].second * st.k_row_bytes, st.k_row_bytes);
            memcpy(vd + i * st.v_row_bytes, kv.v_data(il) + (size_t)cells[i].second * st.v_row_bytes, st.v_row_bytes);
        }
    }
    return st;
}

bool seq_state_import(KvCache& kv, int seq, const SeqState& st) {
    const KvCacheParams& p = kv.params();
    if (st.n_layer != p.n_layer || st.type_k != p.type_k || st.type_v != p.type_v ||
        st.k_row_bytes != kv.k_row_bytes() || st.v_row_bytes != kv.v_row_bytes())
        fail("KV state import: the state has %d layers, types %s/%s, rows of %zu/%zu bytes; the cache has %d, %s/%s, "
             "%zu/%zu", st.n_layer, ggml_type_name(st.type_k), ggml_type_name(st.type_v), st.k_row_bytes,
             st.v_row_bytes, p.n_layer, ggml_type_name(p.type_k), ggml_type_name(p.type_v), kv.k_row_bytes(),
             kv.v_row_bytes());
    if (kv.seq_n_cells(seq) != 0) fail("KV state import: sequence %d is not empty (remove its cells first)", seq);
    const int n = st.n_cells();
    if (n == 0) return true;
    std::vector<int32_t> seqs(n, seq), cells(n);
    if (!kv.alloc(n, st.pos.data(), seqs.data(), cells.data())) return false;
    for (int il = 0; il < p.n_layer; il++) {
        const uint8_t* kd = st.k.data() + (size_t)il * n * st.k_row_bytes;
        const uint8_t* vd = st.v.data() + (size_t)il * n * st.v_row_bytes;
        for (int i = 0; i < n; i++) {
            memcpy(kv.k_row(il, cells[i]), kd + (size_t)i * st.k_row_bytes, st.k_row_bytes);
            memcpy(kv.v_row(il, cells[i]), vd + (size_t)i * st.v_row_bytes, st.v_row_bytes);
        }
    }
    return true;
}

}  // namespace bee
