// tests/unit/model/ref_forward: float64 reference forward of llama / qwen2 / qwen3 / gemma3 (no src/ kernels).
#include "ref_forward.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace bee::test {

namespace {

using Vec = std::vector<double>;

// What each architecture means, written out from the model papers / llama.cpp graphs, not from src/.
struct ArchTraits {
    bool neox_rope;    // pairs (i, i + n_rot/2) instead of (2i, 2i+1)
    bool gelu;         // GeGLU (tanh GELU) instead of SwiGLU
    bool gemma_scale;  // embeddings times sqrt(n_embd)
    bool swa_pattern;  // layers with il % 6 < 5 use the sliding window and rope.freq_base_swa
};

ArchTraits traits_of(const std::string& arch) {
    if (arch == "llama") return {false, false, false, false};
    if (arch == "gemma3") return {true, true, true, true};
    return {true, false, false, false};  // qwen2, qwen3
}

// y = x / sqrt(mean(x²) + eps) * w over n values.
void rms_norm(const double* x, const std::vector<float>& w, double* y, int n, double eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    const double s = 1.0 / std::sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * s * w[i];
}

// y (rows) = W (rows, cols) · x (cols) + b.
Vec matvec(const std::vector<float>& W, const std::vector<float>& b, const Vec& x, int rows) {
    const int cols = (int)x.size();
    Vec y(rows);
    for (int r = 0; r < rows; r++) {
        double s = b.empty() ? 0.0 : b[r];
        for (int c = 0; c < cols; c++) s += (double)W[(size_t)r * cols + c] * x[c];
        y[r] = s;
    }
    return y;
}

// Rotates the first n_rot dims of each head of x (n_head, hd) for position pos:
// theta_i = scale * pos * base^(-2i/n_rot) / freqs[i] (freqs empty: 1).
void rope(double* x, int n_head, int hd, int n_rot, int32_t pos, double base, double scale,
          const std::vector<float>& freqs, bool neox) {
    const int half = n_rot / 2;
    for (int h = 0; h < n_head; h++) {
        double* v = x + (size_t)h * hd;
        for (int i = 0; i < half; i++) {
            const double th = scale * pos * std::pow(base, -2.0 * i / n_rot) / (freqs.empty() ? 1.0 : freqs[i]);
            const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
            const double x0 = v[i0], x1 = v[i1];
            v[i0] = x0 * std::cos(th) - x1 * std::sin(th);
            v[i1] = x0 * std::sin(th) + x1 * std::cos(th);
        }
    }
}

double act(double x, bool gelu) {
    if (!gelu) return x / (1.0 + std::exp(-x));
    const double k = 0.79788456080286535588;
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

}  // namespace

std::vector<double> reference_logits(const TinyConfig& c, const TinyWeights& w, const std::vector<int32_t>& tokens,
                                     const std::vector<int32_t>& pos) {
    const ArchTraits at = traits_of(c.arch);
    const int n = (int)tokens.size(), e = c.n_embd, hd = c.head_dim;
    const int nq = c.n_head * hd, nk = c.n_head_kv * hd;
    const double eps = c.norm_eps;
    std::vector<Vec> x(n, Vec(e));  // residual stream per row
    const double escale = at.gemma_scale ? std::sqrt((double)e) : 1.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < e; j++) x[i][j] = escale * w.tok_embd[(size_t)tokens[i] * e + j];

    for (int il = 0; il < c.n_layer; il++) {
        const TinyLayer& L = w.layers[il];
        const bool swa = at.swa_pattern && c.n_swa > 0 && il % 6 < 5;
        const double base = swa ? (c.rope_base_swa > 0 ? c.rope_base_swa : 10000.0) : c.rope_base;
        const double scale = swa || c.rope_scale <= 0 ? 1.0 : 1.0 / c.rope_scale;
        const int n_rot = c.n_rot > 0 ? c.n_rot : hd;
        std::vector<Vec> q(n), k(n), v(n);
        for (int i = 0; i < n; i++) {
            Vec xn(e);
            rms_norm(x[i].data(), L.attn_norm, xn.data(), e, eps);
            q[i] = matvec(L.wq, L.bq, xn, nq);
            k[i] = matvec(L.wk, L.bk, xn, nk);
            v[i] = matvec(L.wv, L.bv, xn, nk);
            if (!L.q_norm.empty()) {
                for (int h = 0; h < c.n_head; h++) rms_norm(&q[i][h * hd], L.q_norm, &q[i][h * hd], hd, eps);
                for (int h = 0; h < c.n_head_kv; h++) rms_norm(&k[i][h * hd], L.k_norm, &k[i][h * hd], hd, eps);
            }
            rope(q[i].data(), c.n_head, hd, n_rot, pos[i], base, scale, w.rope_freqs, at.neox_rope);
            rope(k[i].data(), c.n_head_kv, hd, n_rot, pos[i], base, scale, w.rope_freqs, at.neox_rope);
        }
        for (int i = 0; i < n; i++) {
            Vec att(nq, 0.0);
            for (int h = 0; h < c.n_head; h++) {
                const int kvh = h / (c.n_head / c.n_head_kv);
                std::vector<double> s;
                std::vector<int> seen;
                for (int j = 0; j <= i; j++) {
                    if (swa && pos[i] - pos[j] >= c.n_swa) continue;
                    double d = 0;
                    for (int t = 0; t < hd; t++) d += q[i][h * hd + t] * k[j][kvh * hd + t];
                    s.push_back(d / std::sqrt((double)hd));
                    seen.push_back(j);
                }
                double mx = -1e300, sum = 0;
                for (double z : s) mx = std::max(mx, z);
                for (double& z : s) sum += (z = std::exp(z - mx));
                for (size_t m = 0; m < s.size(); m++)
                    for (int t = 0; t < hd; t++) att[h * hd + t] += s[m] / sum * v[seen[m]][kvh * hd + t];
            }
            Vec o = matvec(L.wo, {}, att, e);
            if (!L.post_attn_norm.empty()) rms_norm(o.data(), L.post_attn_norm, o.data(), e, eps);
            for (int j = 0; j < e; j++) x[i][j] += o[j];
        }
        for (int i = 0; i < n; i++) {
            Vec xn(e);
            rms_norm(x[i].data(), L.ffn_norm, xn.data(), e, eps);
            Vec g = matvec(L.ffn_gate, {}, xn, c.n_ff);
            Vec u = matvec(L.ffn_up, {}, xn, c.n_ff);
            for (int j = 0; j < c.n_ff; j++) g[j] = act(g[j], at.gelu) * u[j];
            Vec y = matvec(L.ffn_down, {}, g, e);
            if (!L.post_ffn_norm.empty()) rms_norm(y.data(), L.post_ffn_norm, y.data(), e, eps);
            for (int j = 0; j < e; j++) x[i][j] += y[j];
        }
    }
    std::vector<double> logits((size_t)n * c.n_vocab);
    for (int i = 0; i < n; i++) {
        Vec h(e);
        rms_norm(x[i].data(), w.output_norm, h.data(), e, eps);
        Vec l = matvec(w.output, {}, h, c.n_vocab);
        std::copy(l.begin(), l.end(), logits.begin() + (size_t)i * c.n_vocab);
    }
    return logits;
}

}  // namespace bee::test
