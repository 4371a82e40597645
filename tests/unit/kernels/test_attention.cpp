// tests/unit/kernels/test_attention: attention on every ISA against the double reference (GQA, F32/F16 KV,
// causal / sliding-window / tree visible lists, softcap), and bit-identical rows alone vs in a batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernels.h"
#include "kernels_test_util.h"

namespace bee {
namespace {

using test::all_isas;
using test::IsaScope;
using test::random_floats;

// One layer's K or V: cell c, kv head h at data + c*cell_bytes + h*head_dim*elem (cells padded).
struct KvStore {
    GgmlType type;
    size_t cell_bytes;
    std::vector<uint8_t> data;  // (n_cells, cell_bytes)
};

KvStore make_kv(GgmlType t, int n_cells, int n_head_kv, int head_dim, uint32_t seed) {
    const size_t elem = t == GgmlType::F16 ? 2 : 4;
    KvStore s{t, n_head_kv * head_dim * elem + 16, {}};  // +16: a stride that is not the packed size
    s.data.assign(s.cell_bytes * n_cells, 0xAB);
    std::vector<float> v = random_floats((size_t)n_cells * n_head_kv * head_dim, seed);
    for (int c = 0; c < n_cells; c++) {
        for (int i = 0; i < n_head_kv * head_dim; i++) {
            const float f = v[(size_t)c * n_head_kv * head_dim + i];
            uint8_t* p = s.data.data() + c * s.cell_bytes + i * elem;
            if (t == GgmlType::F16) {
                const fp16_t h = fp32_to_fp16(f);
                memcpy(p, &h, 2);
            } else {
                memcpy(p, &f, 4);
            }
        }
    }
    return s;
}

using Lists = std::vector<std::vector<int32_t>>;

// Visible cell lists of n_rows query rows over n_cells cells, by pattern.
Lists make_lists(const char* pattern, int n_rows, int n_cells, uint32_t seed) {
    Lists l(n_rows);
    std::mt19937 rng(seed);
    for (int r = 0; r < n_rows; r++) {
        const int last = n_cells - n_rows + r;  // row r sits at cell `last`
        if (!strcmp(pattern, "causal")) {
            for (int c = 0; c <= last; c++) l[r].push_back(c);
        } else if (!strcmp(pattern, "window")) {  // sliding window of 20
            for (int c = std::max(0, last - 19); c <= last; c++) l[r].push_back(c);
        } else if (!strcmp(pattern, "tree")) {  // shared prefix + a random set of ancestors, ascending
            const int prefix = n_cells / 3;
            for (int c = 0; c < prefix; c++) l[r].push_back(c);
            for (int c = prefix; c < last; c++)
                if (rng() % 3 == 0) l[r].push_back(c);
            l[r].push_back(last);
        } else {  // "single"
            l[r].push_back(last);
        }
    }
    return l;
}

struct AttnCase {
    int n_head, n_head_kv, head_dim, n_cells, n_rows;
    GgmlType k_type, v_type;
    float softcap;
};

AttentionArgs make_args(const AttnCase& c, const std::vector<float>& q, const KvStore& k, const KvStore& v,
                        const std::vector<const std::vector<int32_t>*>& vis, float* out) {
    AttentionArgs a;
    a.n_rows = (int)vis.size();
    a.n_head = c.n_head;
    a.n_head_kv = c.n_head_kv;
    a.head_dim = c.head_dim;
    a.q = q.data();
    a.out = out;
    a.scale = 4.0f / std::sqrt((float)c.head_dim);  // x4: peaky softmax, scores up to ~±10
    a.softcap = c.softcap;
    a.k_type = k.type;
    a.v_type = v.type;
    a.k = k.data.data();
    a.v = v.data.data();
    a.k_cell_bytes = k.cell_bytes;
    a.v_cell_bytes = v.cell_bytes;
    a.visible = vis.data();
    return a;
}

const AttnCase kCases[] = {
    {6, 2, 64, 70, 5, GgmlType::F32, GgmlType::F32, 0},    {6, 2, 64, 70, 5, GgmlType::F16, GgmlType::F16, 0},
    {6, 2, 64, 70, 5, GgmlType::F16, GgmlType::F32, 5.0f}, {4, 4, 40, 200, 3, GgmlType::F32, GgmlType::F16, 0},
    {8, 1, 20, 45, 4, GgmlType::F16, GgmlType::F16, 0},    {2, 1, 128, 130, 2, GgmlType::F32, GgmlType::F32, 30.0f},
};
const char* const kPatterns[] = {"causal", "window", "tree", "single"};

TEST(Attention, MatchesDoubleReference) {
    ThreadPool pool(3);
    double worst = 0;
    for (const AttnCase& c : kCases) {
        KvStore k = make_kv(c.k_type, c.n_cells, c.n_head_kv, c.head_dim, 1),
                v = make_kv(c.v_type, c.n_cells, c.n_head_kv, c.head_dim, 2);
        std::vector<float> q = random_floats((size_t)c.n_rows * c.n_head * c.head_dim, 3, -2, 2);
        for (const char* pat : kPatterns) {
            Lists lists = make_lists(pat, c.n_rows, c.n_cells, 4);
            std::vector<const std::vector<int32_t>*> vis;
            for (auto& l : lists) vis.push_back(&l);
            std::vector<float> want(q.size());
            ref::attention(make_args(c, q, k, v, vis, want.data()));
            for (Isa isa : all_isas()) {
                IsaScope scope(isa);
                std::vector<float> got(q.size(), NAN);
                attention(pool, make_args(c, q, k, v, vis, got.data()));
                for (size_t i = 0; i < got.size(); i++) {
                    // bound: outputs are convex mixes of |v| <= 1; float scores/exp/sums: 1e-5 absolute
                    ASSERT_NEAR(got[i], want[i], 1e-5) << pat << " " << isa_name(isa) << " hd=" << c.head_dim
                                                       << " softcap=" << c.softcap << " i=" << i;
                    worst = std::max(worst, (double)std::fabs(got[i] - want[i]));
                }
            }
        }
    }
    printf("[ attention] max |fast - ref| = %.2e\n", worst);
}

TEST(Attention, RowAloneEqualsRowInBatch) {
    ThreadPool pool1(1), pool3(3);
    for (const AttnCase& c : kCases) {
        KvStore k = make_kv(c.k_type, c.n_cells, c.n_head_kv, c.head_dim, 5),
                v = make_kv(c.v_type, c.n_cells, c.n_head_kv, c.head_dim, 6);
        std::vector<float> q = random_floats((size_t)c.n_rows * c.n_head * c.head_dim, 7, -2, 2);
        const size_t row = (size_t)c.n_head * c.head_dim;
        for (const char* pat : kPatterns) {
            Lists lists = make_lists(pat, c.n_rows, c.n_cells, 8);
            std::vector<const std::vector<int32_t>*> vis;
            for (auto& l : lists) vis.push_back(&l);
            for (Isa isa : all_isas()) {
                IsaScope scope(isa);
                for (ThreadPool* pool : {&pool1, &pool3}) {
                    std::vector<float> batch(q.size());
                    attention(*pool, make_args(c, q, k, v, vis, batch.data()));
                    for (int r = 0; r < c.n_rows; r++) {
                        std::vector<float> q1(q.begin() + r * row, q.begin() + (r + 1) * row), alone(row);
                        std::vector<const std::vector<int32_t>*> vis1 = {vis[r]};
                        attention(pool1, make_args(c, q1, k, v, vis1, alone.data()));
                        ASSERT_EQ(0, memcmp(alone.data(), batch.data() + r * row, row * 4))
                            << pat << " " << isa_name(isa) << " row=" << r << " threads=" << pool->size();
                    }
                }
            }
        }
    }
}

TEST(Attention, EmptyListGivesZeros) {
    AttnCase c{2, 1, 16, 4, 1, GgmlType::F32, GgmlType::F32, 0};
    KvStore k = make_kv(c.k_type, 4, 1, 16, 1), v = make_kv(c.v_type, 4, 1, 16, 2);
    std::vector<float> q = random_floats(32, 3);
    std::vector<int32_t> empty;
    std::vector<const std::vector<int32_t>*> vis = {&empty};
    std::vector<float> out(32, NAN);
    ThreadPool pool(1);
    attention(pool, make_args(c, q, k, v, vis, out.data()));
    for (float f : out) EXPECT_EQ(f, 0.0f);
}

TEST(Attention, SupportedKvTypes) {
    EXPECT_TRUE(attention_supports_kv_type(GgmlType::F32));
    EXPECT_TRUE(attention_supports_kv_type(GgmlType::F16));
    EXPECT_FALSE(attention_supports_kv_type(GgmlType::Q4_K));
}

}  // namespace
}  // namespace bee
