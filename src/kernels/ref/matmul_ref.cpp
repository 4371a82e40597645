// kernels/ref/matmul_ref: reference matmul: reference quantizer and reference vec_dot in plain loops.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/kernels.h"

namespace bee::ref {

void matmul(GgmlType wtype, const void* w, int64_t n_out, int64_t n_in, const float* x, int64_t n_tok, float* y) {
    const QuantTraits* tr = quant_traits(wtype);
    if (!tr || !tr->vec_dot) {
        fprintf(stderr, "bee: ref::matmul: no vec_dot for type %u\n", (unsigned)wtype);
        abort();
    }
    const GgmlType at = tr->vec_dot_type;
    const size_t w_row = ggml_row_size(wtype, n_in);
    size_t a_row = (size_t)n_in * sizeof(float);
    std::vector<uint8_t> aq;  // (n_tok, a_row) activations in vec_dot_type
    const uint8_t* a = (const uint8_t*)x;
    if (at != GgmlType::F32) {
        a_row = ggml_row_size(at, n_in);
        aq.resize(a_row * (size_t)n_tok);
        for (int64_t t = 0; t < n_tok; t++) quant_traits(at)->quantize_row(x + t * n_in, aq.data() + t * a_row, n_in);
        a = aq.data();
    }
    for (int64_t t = 0; t < n_tok; t++) {
        for (int64_t o = 0; o < n_out; o++) {
            tr->vec_dot(n_in, (const uint8_t*)w + o * w_row, a + t * a_row, &y[t * n_out + o]);
        }
    }
}

}  // namespace bee::ref
