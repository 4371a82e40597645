// model/check_tensors: dequantize each row and look for NaN / inf (llama.cpp's --check-tensors).
#include "model/check_tensors.h"

#include <cmath>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "base/timer.h"
#include "quant/quant.h"

namespace bee {

void check_tensor_data(const GgufFile& f) {
    const double t0 = time_ms();
    std::vector<float> row;
    for (const GgufTensor& t : f.tensors()) {
        const QuantTraits* q = quant_traits(t.type);
        if (!q)
            fail("%s: --check-tensors: tensor '%s' has type %s, which Bee cannot read", f.path().c_str(),
                 t.name.c_str(), ggml_type_name(t.type));
        const int64_t n_cols = t.ne[0], n_rows = t.n_elements() / t.ne[0];
        const size_t row_bytes = ggml_row_size(t.type, n_cols);
        row.resize((size_t)n_cols);
        for (int64_t r = 0; r < n_rows; r++) {
            q->dequantize_row(t.data + (size_t)r * row_bytes, row.data(), n_cols);
            for (int64_t c = 0; c < n_cols; c++) {
                if (!std::isfinite(row[c]))
                    fail("%s: --check-tensors: tensor '%s' row %lld column %lld is %s", f.path().c_str(),
                         t.name.c_str(), (long long)r, (long long)c, std::isnan(row[c]) ? "NaN" : "inf");
            }
        }
    }
    BEE_LOG_INFO("--check-tensors: %zu tensors, every value finite (%.0f ms)", f.tensors().size(), time_ms() - t0);
}

}  // namespace bee
