// kernels/attention: one attention driver (fixed-tile online softmax) for every KV type; what varies per
// type is how a tile of stored heads is scored and accumulated (KvOps, kernels_impl.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/cpu.h"
#include "kernels/kernels.h"
#include "kernels/kernels_impl.h"
#include "quant/turbo.h"

namespace bee {

namespace {

// Cells per tile of the online softmax. Tiles are cut by index in the row's visible list, so a row's
// result depends only on its list, never on the batch (DESIGN.md invariant 2).
constexpr int kTile = kAttnTile;

// note: split-K (flash-decoding): a row's visible list is cut into partitions of kPart cells, each a
// separate task that yields per query head its running max, sum and unnormalised accumulator; the
// partials are then merged in partition order. Without it a generated row is one task per kv head
// walking every cell (SmolLM2: 3 kv heads on 2 threads, one idles half the time at long context).
// kPart is a constant (never the thread count or the batch), so a row's bits never depend on either.
constexpr int kPart = 8 * kTile;
static_assert(kPart % kTile == 0, "partitions hold whole tiles");

int row_parts(int n_cells) { return n_cells <= kPart ? 1 : (n_cells + kPart - 1) / kPart; }

struct AttnJob {
    const AttentionArgs* a;
    KvOps kops, vops;
    AttnMath math;
    int dk, dv;                         // head width padded to K's / V's block size
    size_t k_head_bytes, v_head_bytes;  // bytes of one kv head in K / V (kv_head_bytes)
    int group;                          // query heads per kv head (GQA)
    int heads_per_task;                 // query heads of one group handled by one task
    int kv_per_task = 1;                // kv heads handled by one task (then whole groups each)
    // Several query rows: every visible cell's K / V heads decoded once up front (decode_cells), as
    // (cell, kv head, dk / dv) floats; nullptr when the type is read in place or rows are single.
    const float* k_dec = nullptr;
    const float* v_dec = nullptr;
    const uint8_t* row_dec = nullptr;  // per row: 1 if it reads k_dec / v_dec, 0 if it reads in place
    // Split-K partials of rows with more than one partition: slot (part_base[r] + p) * n_head + h holds
    // head h's max (pm), sum (pl) and accumulator (pacc, dv floats) over partition p of row r.
    const int* part_base = nullptr;  // n_rows + 1 prefix sums of row_parts
    float *pm = nullptr, *pl = nullptr, *pacc = nullptr;
};

// Per-thread scratch: nh queries (dk each), nh accumulators (dv each), a tile of K and V heads decoded
// for types without fused tile kernels, the tile's head pointers, nh tiles of scores, per-head running
// max, sum and the tile's rescale of the accumulator.
struct Scratch {
    std::vector<float> q, acc, kbuf, vbuf, s, m, l, corr;
    const uint8_t* kptr[kTile];
    const uint8_t* vptr[kTile];
    void fit(const AttnJob& j) {
        const size_t nh = (size_t)j.heads_per_task * j.kv_per_task;
        q.resize(nh * j.dk), acc.resize(nh * j.dv), kbuf.resize((size_t)kTile * j.dk),
            vbuf.resize((size_t)kTile * j.dv);
        s.resize(nh * kTile), m.resize(nh), l.resize(nh), corr.resize(nh);
    }
};

// The query as K's decode gives it: zero-padded to dk and, for TurboQuant K, rotated group by group
// (once per row and head, never per cell: spec §6 "rotate Q"), so scores are dot products with the
// centroid values of the stored codes.
void prepare_query(const AttnJob& j, const float* q, float* qp) {
    const int d = j.a->head_dim;
    memcpy(qp, q, (size_t)d * sizeof(float));
    memset(qp + d, 0, (size_t)(j.dk - d) * sizeof(float));
    if (j.kops.rot_group > 0)
        for (int g = 0; g < j.dk; g += j.kops.rot_group) turbo_rotate(qp + g, j.kops.rot_group);
}

// The kernel that reads kv head kvh of a tile's cells, and the head pointers it reads (ptrs[c]): the
// type's fused kernel on the stored bytes, else the f32 kernel on pre-decoded cells (dec), on F32 rows
// read in place, or on heads decoded into buf here. Either way the same bits (kernels_impl.h).
template <class Fn>
Fn tile_heads(const KvOps& ops, Fn fused, Fn f32, const float* dec, const uint8_t* base, size_t cell_bytes,
              size_t head_bytes, int n_head_kv, const int32_t* cells, int nt, int kvh, int n, float* buf,
              const uint8_t** ptrs) {
    // note: one loop per case, no test per cell (this runs for K and V of every tile)
    if (dec) {
        for (int c = 0; c < nt; c++) ptrs[c] = (const uint8_t*)(dec + ((size_t)cells[c] * n_head_kv + kvh) * n);
        return f32;
    }
    base += kvh * head_bytes;
    if (fused || !ops.decode) {
        for (int c = 0; c < nt; c++) ptrs[c] = base + (size_t)cells[c] * cell_bytes;
        return fused ? fused : f32;
    }
    for (int c = 0; c < nt; c++) {
        ops.decode(base + (size_t)cells[c] * cell_bytes, buf + (size_t)c * n, n);
        ptrs[c] = (const uint8_t*)(buf + (size_t)c * n);
    }
    return f32;
}

// The output of one query head from its (merged) accumulator and sum: TurboQuant V was accumulated in
// the rotated domain (one inverse rotation per group, linear, so after the merge), then normalised.
void finish_head(const AttnJob& j, float* acc, float l, float* out) {
    if (j.vops.rot_group > 0)
        for (int g = 0; g < j.dv; g += j.vops.rot_group) turbo_unrotate(acc + g, j.vops.rot_group);
    const float inv = l > 0 ? 1.0f / l : 0.0f;  // empty list: zeros
    const int d = j.a->head_dim;
    int e = 0;
    for (; e + 4 <= d; e += 4)  // four statements the compiler turns into one vector multiply
        out[e] = acc[e] * inv, out[e + 1] = acc[e + 1] * inv, out[e + 2] = acc[e + 2] * inv,
        out[e + 3] = acc[e + 3] * inv;
    for (; e < d; e++) out[e] = acc[e] * inv;
}

// Query heads h0..h0+nh-1 of row r over partition part of its cells, all reading kv head kvh. The
// tile kernels load each K and V head once per cell for every query head of the task (GQA); each
// head's arithmetic is the same whatever nh is, so the split of heads into tasks never changes a result.
// With n_kv > 1 the task takes kv heads kvh0 .. kvh0 + n_kv - 1, each with its whole group (h0 = kvh0 ·
// group, nh = group), tile by tile: head h0 + g · group + i sits in scratch slot g · nh + i and is computed
// exactly as in a task of its kv head alone.
void attend_heads(const AttnJob& j, int r, int part, int kvh0, int n_kv, int h0, int nh, Scratch& w) {
    const AttentionArgs& a = *j.a;
    const int d = a.head_dim, dk = j.dk, dv = j.dv;
    auto head = [&](int slot) { return h0 + slot / nh * j.group + slot % nh; };
    for (int i = 0; i < n_kv * nh; i++) {
        prepare_query(j, a.q + ((size_t)r * a.n_head + head(i)) * d, w.q.data() + (size_t)i * dk);
        w.m[i] = -INFINITY;
        w.l[i] = 0;
    }
    memset(w.acc.data(), 0, sizeof(float) * n_kv * nh * dv);
    const int n_all = (int)a.visible[r]->size();
    const int32_t* cells = a.visible[r]->data() + (size_t)part * kPart;
    const int n = std::min(kPart, n_all - part * kPart);
    const int n_parts = row_parts(n_all);
    const bool dec = j.row_dec && j.row_dec[r];
    const float* k_dec = dec ? j.k_dec : nullptr;
    const float* v_dec = dec ? j.v_dec : nullptr;
    const float inv_cap = a.softcap > 0 ? 1.0f / a.softcap : 0.0f;
    for (int t0 = 0; t0 < n; t0 += kTile)
        for (int g = 0; g < n_kv; g++) {
            const int nt = n - t0 < kTile ? n - t0 : kTile, kvh = kvh0 + g;
            float* q = w.q.data() + (size_t)g * nh * dk;
            float* s = w.s.data() + (size_t)g * nh * kTile;
            float* acc = w.acc.data() + (size_t)g * nh * dv;
            const KvScoreFn score =
                tile_heads(j.kops, j.kops.score, j.math.score, k_dec, a.k, a.k_cell_bytes, j.k_head_bytes, a.n_head_kv,
                           cells + t0, nt, kvh, dk, w.kbuf.data(), w.kptr);
            score(q, nh, dk, w.kptr, nt, s);
            float scale = a.scale;
            if (a.softcap > 0) {  // the cap first, then the step takes the capped scores as they are
                for (int i = 0; i < nh; i++)
                    for (int c = 0; c < nt; c++)
                        s[i * kTile + c] = a.softcap * tanhf(a.scale * s[i * kTile + c] * inv_cap);
                scale = 1.0f;
            }
            float* corr = w.corr.data() + g * nh;  // the accumulators' rescale
            j.math.softmax(s, nh, nt, scale, w.m.data() + g * nh, w.l.data() + g * nh, corr);
            const KvAccumFn accum =
                tile_heads(j.vops, j.vops.accum, j.math.accum, v_dec, a.v, a.v_cell_bytes, j.v_head_bytes, a.n_head_kv,
                           cells + t0, nt, kvh, dv, w.vbuf.data(), w.vptr);
            accum(acc, nh, dv, corr, s, w.vptr, nt);
        }
    for (int i = 0; i < n_kv * nh; i++) {
        float* acc = w.acc.data() + (size_t)i * dv;
        if (n_parts == 1) {
            finish_head(j, acc, w.l[i], a.out + ((size_t)r * a.n_head + head(i)) * d);
            continue;
        }
        const size_t slot = (size_t)(j.part_base[r] + part) * a.n_head + head(i);
        j.pm[slot] = w.m[i];
        j.pl[slot] = w.l[i];
        memcpy(j.pacc + slot * dv, acc, sizeof(float) * dv);
    }
}

// Merges head h of row r over its partitions in order 0, 1, 2, ... (fixed, so deterministic): each
// partial is rescaled to the overall max. One partition would give exp(0) = 1 weights, i.e. the same
// bits as finishing it directly.
void merge_head(const AttnJob& j, int r, int h, float* acc) {
    const AttentionArgs& a = *j.a;
    const int p0 = j.part_base[r], np = j.part_base[r + 1] - p0, dv = j.dv;
    float mx = -INFINITY;
    for (int p = 0; p < np; p++) mx = std::max(mx, j.pm[(size_t)(p0 + p) * a.n_head + h]);
    memset(acc, 0, sizeof(float) * dv);
    float l = 0;
    for (int p = 0; p < np && mx != -INFINITY; p++) {
        const size_t slot = (size_t)(p0 + p) * a.n_head + h;
        if (j.pm[slot] == -INFINITY) continue;
        const float wgt = expf(j.pm[slot] - mx);
        const float* pa = j.pacc + slot * dv;
        for (int e = 0; e < dv; e++) acc[e] += pa[e] * wgt;
        l += j.pl[slot] * wgt;
    }
    finish_head(j, acc, l, a.out + ((size_t)r * a.n_head + h) * a.head_dim);
}

// note: with several query rows of one sequence (prefill, verify batches) every row would decode the
// cells it sees, i.e. each cell once per row; instead each cell those rows share is decoded once per
// call into a float scratch owned by the calling thread. A row whose cells no other row sees (the
// one generated row of each server slot) reads them in place as a single row does: decoding them up
// front would be pure extra work. The values are the same bits either way, so results do not depend
// on which way they were read (invariant 2).
// note: f16, bf16 and q8_0 (fused tile kernels converting in registers) are always read in place: that
// was faster than reading pre-decoded floats (twice the bytes of f16, plus the decode pass) at every
// batch measured (docs/PERFORMANCE-LOG.md, 2026-11-22): f16 rows of one sequence sharing ~200
// cells 1.6x (4-8 rows) to 1.25x (256 rows), pp512 +9%. The scalar TurboQuant types' in-register
// table lookups are dearer (64 rows 15% slower in place), so they, the legacy 4/5-bit blocks and TCQ
// are still decoded once per call.
bool pre_decoded(const KvOps& ops, GgmlType t) { return ops.decode && (!ops.score || is_turbo_type(t)); }

struct DecodedCells {
    std::vector<float> k, v;    // (max cell + 1, n_head_kv, dk / dv)
    std::vector<uint8_t> uses;  // per cell: rows that see it, saturating at 2; then 3: to decode
    std::vector<uint8_t> row_dec;
    std::vector<int32_t> cells;
    std::vector<uint32_t> seen;  // per cell: the call (epoch) that last saw it, for rows_disjoint
    uint32_t epoch = 0;
};

// True when no cell is visible to two rows (the server's step: one generated row per sequence). One
// pass marking each cell with this call's epoch, so the usual case skips the full count below (three
// passes over every visible cell, up to ~5% of attention at ~80 cells per row) and nothing is cleared.
bool rows_disjoint(const AttentionArgs& a, DecodedCells& d) {
    if (++d.epoch == 0) std::fill(d.seen.begin(), d.seen.end(), 0u), d.epoch = 1;  // wrapped: forget all
    for (int r = 0; r < a.n_rows; r++)
        for (int32_t c : *a.visible[r]) {
            if ((size_t)c >= d.seen.size()) d.seen.resize((size_t)c + 1 + c / 2, 0u);
            if (d.seen[c] == d.epoch) return false;
            d.seen[c] = d.epoch;
        }
    return true;
}

void decode_cells(ThreadPool& pool, AttnJob& j, DecodedCells& d) {
    const AttentionArgs& a = *j.a;
    if (rows_disjoint(a, d)) return;
    int32_t max_cell = -1;
    for (int r = 0; r < a.n_rows; r++)
        for (int32_t c : *a.visible[r]) max_cell = c > max_cell ? c : max_cell;
    if (max_cell < 0) return;
    d.uses.assign(max_cell + 1, 0);
    for (int r = 0; r < a.n_rows; r++)
        for (int32_t c : *a.visible[r]) d.uses[c] += d.uses[c] < 2;
    // A row reads pre-decoded cells when most of its cells are shared with another row.
    d.row_dec.assign(a.n_rows, 0);
    d.cells.clear();
    for (int r = 0; r < a.n_rows; r++) {
        int shared = 0;
        for (int32_t c : *a.visible[r]) shared += d.uses[c] >= 2;
        if (shared == 0 || 2 * shared < (int)a.visible[r]->size()) continue;
        d.row_dec[r] = 1;
        for (int32_t c : *a.visible[r])
            if (d.uses[c] != 3) d.uses[c] = 3, d.cells.push_back(c);
    }
    if (d.cells.empty()) return;
    const size_t n_kv = a.n_head_kv;
    const bool dec_k = pre_decoded(j.kops, a.k_type), dec_v = pre_decoded(j.vops, a.v_type);
    if (dec_k) d.k.resize((max_cell + 1) * n_kv * j.dk);
    if (dec_v) d.v.resize((max_cell + 1) * n_kv * j.dv);
    constexpr int kChunk = 64;
    const int n_chunks = ((int)d.cells.size() + kChunk - 1) / kChunk;
    pool.run(n_chunks, [&](int chunk, int) {
        const int end = std::min((int)d.cells.size(), (chunk + 1) * kChunk);
        for (int i = chunk * kChunk; i < end; i++) {
            const size_t c = d.cells[i];
            for (size_t h = 0; h < n_kv; h++) {
                if (dec_k)
                    j.kops.decode(a.k + c * a.k_cell_bytes + h * j.k_head_bytes, &d.k[(c * n_kv + h) * j.dk], j.dk);
                if (dec_v)
                    j.vops.decode(a.v + c * a.v_cell_bytes + h * j.v_head_bytes, &d.v[(c * n_kv + h) * j.dv], j.dv);
            }
        }
    });
    if (dec_k) j.k_dec = d.k.data();
    if (dec_v) j.v_dec = d.v.data();
    j.row_dec = d.row_dec.data();
}

}  // namespace

KvOps kv_ops_for(GgmlType t) {
    KvOps ops = kv_scalar::ops(t);
    const Isa isa = cpu_isa();
    auto take = [&ops](const KvOps& o) {
        if (o.decode) ops.decode = o.decode;
        ops.score = o.score;  // fused kernels only from the active ISA (they match its AttnMath)
        ops.accum = o.accum;
    };
    if (isa >= Isa::avx2) take(avx2_ops::kv_ops(t));
    if (isa >= Isa::avx512) take(avx512_ops::kv_ops(t));
    return ops;
}

AttnMath attn_math_for() {
    const Isa isa = cpu_isa();
    if (isa >= Isa::avx512) return avx512_ops::attn_math();
    if (isa >= Isa::avx2) return avx2_ops::attn_math();
    return kv_scalar::attn_math();
}

bool attention_supports_kv_type(GgmlType t) { return kv_ops_for(t).supported; }

void attention(ThreadPool& pool, const AttentionArgs& a) {
    if (a.n_rows <= 0 || a.n_head <= 0) return;
    AttnJob j;
    j.a = &a;
    j.kops = kv_ops_for(a.k_type);
    j.vops = kv_ops_for(a.v_type);
    if (!j.kops.supported || !j.vops.supported) {
        fprintf(stderr, "bee: attention: unsupported KV types %u/%u\n", (unsigned)a.k_type, (unsigned)a.v_type);
        abort();
    }
    // Rotated legacy block types (kv_rot_group) use the TurboQuant rotation path of the driver.
    if (a.k_rot_group > 0) j.kops.rot_group = a.k_rot_group;
    if (a.v_rot_group > 0) j.vops.rot_group = a.v_rot_group;
    j.math = attn_math_for();
    j.dk = kv_padded_dim(a.k_type, a.head_dim);
    j.dv = kv_padded_dim(a.v_type, a.head_dim);
    j.k_head_bytes = kv_head_bytes(a.k_type, a.head_dim);
    j.v_head_bytes = kv_head_bytes(a.v_type, a.head_dim);
    j.group = a.n_head / a.n_head_kv;
    // note: a task takes every query head of a kv head (each K / V head is loaded once for them all)
    // unless that leaves threads idle (a single generated row with fewer kv heads than threads): then
    // groups are halved until every thread has a task, at the cost of loading the cells once per task.
    // Results do not depend on the split (see attend_heads).
    // A task is (row, partition, kv head, head chunk); part_base numbers the (row, partition) units.
    static thread_local std::vector<int> part_base;
    part_base.assign(a.n_rows + 1, 0);
    for (int r = 0; r < a.n_rows; r++) part_base[r + 1] = part_base[r] + row_parts((int)a.visible[r]->size());
    const int n_units = part_base[a.n_rows];
    j.heads_per_task = j.group;
    while (j.heads_per_task > 1 &&
           n_units * a.n_head_kv * ((j.group + j.heads_per_task - 1) / j.heads_per_task) < pool.size())
        j.heads_per_task = (j.heads_per_task + 1) / 2;
    const int tasks_per_kvh = (j.group + j.heads_per_task - 1) / j.heads_per_task;
    // note: with many (row, partition) units (the server's step: 8 rows on 2 threads) a task takes every
    // kv head of its unit, tile by tile, so a cell's K (then V) heads are read together, one contiguous
    // row of the cache instead of three visits 128 bytes apart at different times: 3-6% of attention
    // at 80-400 interleaved cells (docs/PERFORMANCE-LOG.md, 2026-11-22). Fewer, longer tasks, so
    // only from 4 units per thread on. The arithmetic per head is the same either way.
    if (j.heads_per_task == j.group && n_units >= 4 * pool.size()) j.kv_per_task = a.n_head_kv;
    static thread_local DecodedCells decoded;
    if (a.n_rows > 1 && (pre_decoded(j.kops, a.k_type) || pre_decoded(j.vops, a.v_type)))
        decode_cells(pool, j, decoded);
    static thread_local std::vector<float> pm, pl, pacc;
    const bool split = n_units > a.n_rows;
    if (split) {
        pm.resize((size_t)n_units * a.n_head), pl.resize(pm.size()), pacc.resize(pm.size() * j.dv);
        j.pm = pm.data(), j.pl = pl.data(), j.pacc = pacc.data();
    }
    j.part_base = part_base.data();
    const int per_unit = j.kv_per_task > 1 ? 1 : a.n_head_kv * tasks_per_kvh;
    pool.run(n_units * per_unit, [&j, tasks_per_kvh, per_unit](int task, int) {
        static thread_local Scratch w;
        w.fit(j);
        const int u = task / per_unit;
        const int r = (int)(std::upper_bound(j.part_base, j.part_base + j.a->n_rows + 1, u) - j.part_base) - 1;
        const int kvh = task / tasks_per_kvh % j.a->n_head_kv;
        const int h0 = kvh * j.group + task % tasks_per_kvh * j.heads_per_task;
        const int nh = std::min(j.heads_per_task, (kvh + 1) * j.group - h0);
        if (j.kv_per_task > 1) attend_heads(j, r, u - j.part_base[r], 0, j.a->n_head_kv, 0, j.group, w);
        else attend_heads(j, r, u - j.part_base[r], kvh, 1, h0, nh, w);
    });
    if (!split) return;
    // Merge the split rows' heads, a few rows per task (each merge is ~n_parts * dv multiply-adds).
    std::vector<int> split_rows;
    for (int r = 0; r < a.n_rows; r++)
        if (part_base[r + 1] - part_base[r] > 1) split_rows.push_back(r);
    const int n_merge = (int)split_rows.size() * a.n_head;
    auto merge = [&](int t, int) {
        static thread_local std::vector<float> acc;
        acc.resize(j.dv);
        merge_head(j, split_rows[t / a.n_head], t % a.n_head, acc.data());
    };
    if (n_merge <= 64) {  // cheaper on this thread than waking the pool
        for (int t = 0; t < n_merge; t++) merge(t, 0);
    } else {
        pool.run(n_merge, merge);
    }
}

}  // namespace bee
