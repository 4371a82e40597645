// model/check_tensors: --check-tensors — every value of every tensor, dequantized, must be finite.
#pragma once
#include "gguf/gguf.h"

namespace bee {

// Throws Error naming the file, the first bad tensor, the row and the value found (NaN or inf).
// Tensors of a type Bee cannot dequantize are an Error too (the model could not use them anyway).
void check_tensor_data(const GgufFile& f);

}  // namespace bee
