// kernels/x86/gemm_tiles_avx512: picks the fixed-shape tile function for a (rows, tokens) tile, shared
// by the AVX-512 GEMM files. Each file supplies its tiles as a struct with
// `template <int R, int C> static void run(n, w, ws, a, as, y, ldy)`.
#pragma once
#include <cstddef>
#include <cstdint>

namespace bee::avx512 {

constexpr int kMaxRows = 4;  // weight rows per tile
constexpr int kMaxCols = 4;  // activation rows (tokens) per tile

using FixedTileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

template <class Tiles>
void tile_any(int64_t n, const uint8_t* w, size_t ws, const uint8_t* a, size_t as, int nr, int nc, float* y,
              size_t ldy) {
    static_assert(kMaxRows == 4 && kMaxCols == 4, "tile table below is 4 x 4");
    static constexpr FixedTileFn table[4][4] = {
        {Tiles::template run<1, 1>, Tiles::template run<1, 2>, Tiles::template run<1, 3>, Tiles::template run<1, 4>},
        {Tiles::template run<2, 1>, Tiles::template run<2, 2>, Tiles::template run<2, 3>, Tiles::template run<2, 4>},
        {Tiles::template run<3, 1>, Tiles::template run<3, 2>, Tiles::template run<3, 3>, Tiles::template run<3, 4>},
        {Tiles::template run<4, 1>, Tiles::template run<4, 2>, Tiles::template run<4, 3>, Tiles::template run<4, 4>},
    };
    table[nr - 1][nc - 1](n, w, ws, a, as, y, ldy);
}

}  // namespace bee::avx512
