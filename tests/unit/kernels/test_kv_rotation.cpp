// tests/unit/kernels/test_kv_rotation: attention over K/V stored Hadamard-rotated per group
// (AttentionArgs::k_rot_group / v_rot_group, as kv/ stores the legacy block types, kv_rot_group):
// exact on float storage (the rotation alone changes nothing), the fast path against the double
// reference on every ISA, and the attention error the rotation removes on K/V with outlier channels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels_test_util.h"
#include "quant/quant.h"
#include "quant/turbo.h"

namespace bee {
namespace {

using test::all_isas;
using test::IsaScope;
using test::random_floats;

const GgmlType kLegacy[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1};

// One layer's K or V (n_cells cells of n_head_kv heads, packed): each head rotated in groups of `rot`
// (0: not at all), then quantized to t.
struct Store {
    GgmlType type;
    int rot;
    size_t cell_bytes;
    std::vector<uint8_t> data;
};

Store make_store(GgmlType t, int rot, const std::vector<float>& x, int n_cells, int n_head_kv, int hd) {
    const size_t hb = kv_head_bytes(t, hd);
    Store s{t, rot, n_head_kv * hb, {}};
    s.data.assign(s.cell_bytes * n_cells, 0);
    const int padded = kv_padded_dim(t, hd);  // turbo3 pads a 64-wide head to its 128-group
    std::vector<float> buf(padded, 0.0f);
    for (int c = 0; c < n_cells; c++)
        for (int h = 0; h < n_head_kv; h++) {
            memcpy(buf.data(), &x[((size_t)c * n_head_kv + h) * hd], hd * sizeof(float));
            for (int g = 0; rot > 0 && g < hd; g += rot) turbo_rotate(buf.data() + g, rot);
            quant_traits(t)->quantize_row(buf.data(), s.data.data() + c * s.cell_bytes + h * hb, padded);
        }
    return s;
}

struct RotSetup {
    int n_head = 6, n_head_kv = 2, hd, n_cells = 70, n_rows = 3;
    std::vector<float> q, k, v;
    std::vector<std::vector<int32_t>> lists;
    std::vector<const std::vector<int32_t>*> vis;
    // outliers: every 29th channel of K and V 12x larger (RoPE'd K looks like this).
    RotSetup(int head_dim, bool outliers) : hd(head_dim) {
        q = random_floats((size_t)n_rows * n_head * hd, 31, -2, 2);
        k = random_floats((size_t)n_cells * n_head_kv * hd, 32);
        v = random_floats((size_t)n_cells * n_head_kv * hd, 33);
        if (outliers)
            for (size_t i = 0; i < k.size(); i++)
                if (i % hd % 29 == 3) k[i] *= 12, v[i] *= 12;
        lists.resize(n_rows);
        for (int r = 0; r < n_rows; r++)
            for (int c = 0; c <= n_cells - n_rows + r; c++) lists[r].push_back(c);
        for (auto& l : lists) vis.push_back(&l);
    }
    AttentionArgs args(const Store& ks, const Store& vs, float* out) const {
        AttentionArgs a;
        a.n_rows = n_rows;
        a.n_head = n_head;
        a.n_head_kv = n_head_kv;
        a.head_dim = hd;
        a.q = q.data();
        a.out = out;
        a.scale = 1.0f / std::sqrt((float)hd);
        a.k_type = ks.type;
        a.v_type = vs.type;
        a.k = ks.data.data();
        a.v = vs.data.data();
        a.k_cell_bytes = ks.cell_bytes;
        a.v_cell_bytes = vs.cell_bytes;
        a.k_rot_group = ks.rot;
        a.v_rot_group = vs.rot;
        a.visible = vis.data();
        return a;
    }
};

double rel_rms(const std::vector<float>& got, const std::vector<float>& want) {
    double e = 0, n = 0;
    for (size_t i = 0; i < got.size(); i++)
        e += (double)(got[i] - want[i]) * (got[i] - want[i]), n += (double)want[i] * want[i];
    return std::sqrt(e / n);
}

// f32 K/V stored rotated give the unrotated result up to float rounding: the driver's query rotation and
// output un-rotation undo the storage rotation exactly (orthogonal transform).
TEST(KvRotation, RotationAloneChangesNothing) {
    ThreadPool pool(2);
    for (int hd : {64, 128, 256})
        for (int rot : {64, 128}) {
            if (hd % rot) continue;
            RotSetup s(hd, true);
            const Store k0 = make_store(GgmlType::F32, 0, s.k, s.n_cells, s.n_head_kv, hd);
            const Store v0 = make_store(GgmlType::F32, 0, s.v, s.n_cells, s.n_head_kv, hd);
            const Store kr = make_store(GgmlType::F32, rot, s.k, s.n_cells, s.n_head_kv, hd);
            const Store vr = make_store(GgmlType::F32, rot, s.v, s.n_cells, s.n_head_kv, hd);
            std::vector<float> want(s.q.size()), ref_rot(s.q.size());
            ref::attention(s.args(k0, v0, want.data()));
            ref::attention(s.args(kr, vr, ref_rot.data()));
            EXPECT_LT(rel_rms(ref_rot, want), 1e-6) << "hd " << hd << " rot " << rot;
            for (Isa isa : all_isas()) {
                IsaScope scope(isa);
                std::vector<float> got(s.q.size(), NAN);
                attention(pool, s.args(kr, vr, got.data()));
                EXPECT_LT(rel_rms(got, want), 1e-5) << isa_name(isa) << " hd " << hd << " rot " << rot;
            }
        }
}

// Rotated legacy types, mixed with plain and turbo types: the fast path equals the double reference
// (which un-rotates each decoded head) on every ISA.
TEST(KvRotation, RotatedLegacyTypesMatchReference) {
    ThreadPool pool(2);
    for (int hd : {64, 256}) {
        const int rot = hd % 128 == 0 ? 128 : 64;
        RotSetup s(hd, true);
        for (GgmlType t : kLegacy) {
            const Store pairs[][2] = {
                {make_store(t, rot, s.k, s.n_cells, s.n_head_kv, hd),
                 make_store(t, rot, s.v, s.n_cells, s.n_head_kv, hd)},
                {make_store(t, rot, s.k, s.n_cells, s.n_head_kv, hd),
                 make_store(GgmlType::TURBO3, 0, s.v, s.n_cells, s.n_head_kv, hd)},
                {make_store(GgmlType::F16, 0, s.k, s.n_cells, s.n_head_kv, hd),
                 make_store(t, rot, s.v, s.n_cells, s.n_head_kv, hd)},
            };
            for (const auto& p : pairs) {
                std::vector<float> want(s.q.size());
                ref::attention(s.args(p[0], p[1], want.data()));
                for (Isa isa : all_isas()) {
                    IsaScope scope(isa);
                    std::vector<float> got(s.q.size(), NAN);
                    attention(pool, s.args(p[0], p[1], got.data()));
                    for (size_t i = 0; i < got.size(); i++)
                        ASSERT_NEAR(got[i], want[i], 2e-5 * (1 + std::fabs(want[i])))
                            << ggml_type_name(p[0].type) << "/" << ggml_type_name(p[1].type) << " " << isa_name(isa)
                            << " hd " << hd << " i " << i;
                }
            }
        }
    }
}

// Attention output error against f32 K/V on data with outlier channels: rotated storage is closer than
// plain storage for every legacy type. Measured ratios (printed): 0.42-0.60 for the symmetric types
// (q8_0 q4_0 q5_0), 0.61-0.86 for q4_1 / q5_1, whose per-block minimum already absorbs part of an
// outlier's range.
TEST(KvRotation, RotationCutsAttentionErrorOnOutlierChannels) {
    ThreadPool pool(2);
    for (int hd : {64, 128}) {
        RotSetup s(hd, true);
        const Store kf = make_store(GgmlType::F32, 0, s.k, s.n_cells, s.n_head_kv, hd);
        const Store vf = make_store(GgmlType::F32, 0, s.v, s.n_cells, s.n_head_kv, hd);
        std::vector<float> exact(s.q.size());
        ref::attention(s.args(kf, vf, exact.data()));
        for (GgmlType t : kLegacy) {
            double err[2];
            for (int on = 0; on < 2; on++) {
                const int rot = on ? (hd % 128 == 0 ? 128 : 64) : 0;
                const Store k = make_store(t, rot, s.k, s.n_cells, s.n_head_kv, hd);
                const Store v = make_store(t, rot, s.v, s.n_cells, s.n_head_kv, hd);
                std::vector<float> got(s.q.size());
                attention(pool, s.args(k, v, got.data()));
                err[on] = rel_rms(got, exact);
            }
            printf("[ kv-rot ] %-5s hd %3d attention rel. RMS error vs f32: rotated %.4f, plain %.4f (x%.2f)\n",
                   ggml_type_name(t), hd, err[1], err[0], err[1] / err[0]);
            const bool affine = t == GgmlType::Q4_1 || t == GgmlType::Q5_1;
            EXPECT_LT(err[1], (affine ? 0.92 : 0.7) * err[0]) << ggml_type_name(t) << " hd " << hd;
        }
    }
}

}  // namespace
}  // namespace bee
