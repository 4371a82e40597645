// model/batch: what Engine::decode takes (rows of token, pos, seq, want-logits, optional tree parents)
// and what it returns (logits of the rows that asked).
#pragma once
#include <cstdint>
#include <vector>

namespace bee {

struct Batch {
    // One entry per row, all the same length.
    std::vector<int32_t> token;
    std::vector<int32_t> pos;
    std::vector<int32_t> seq;
    std::vector<uint8_t> logits;  // 1: return this row's logits
    // Tree drafts: empty for ordinary batches (a row sees its sequence's cells with pos <= its own).
    // Otherwise parent[i] is the index of row i's parent inside the batch, or -1 for a root: the row
    // sees its sequence's cells cached before this batch plus its own ancestors and itself.
    std::vector<int32_t> parent;
    // Hidden-state capture: the residual stream entering each layer in capture_layers (il = n_layer: the
    // final hidden state before the output norm) for the rows whose capture[r] is 1 (capture empty:
    // every row). capture_layers empty: nothing is captured, at no cost.
    std::vector<int32_t> capture_layers;
    std::vector<uint8_t> capture;

    int size() const { return (int)token.size(); }
    void clear() {
        token.clear();
        pos.clear();
        seq.clear();
        logits.clear();
        parent.clear();
        capture_layers.clear();
        capture.clear();
    }
    void add(int32_t tok, int32_t p, int32_t s, bool want_logits) {
        token.push_back(tok);
        pos.push_back(p);
        seq.push_back(s);
        logits.push_back(want_logits ? 1 : 0);
    }
};

struct DecodeOutput {
    int32_t n_vocab = 0;
    std::vector<int32_t> rows;  // batch row of each output, in batch order
    std::vector<float> logits;  // (rows.size(), n_vocab)
    // Captured hidden states (Batch::capture_layers), in batch order of the captured rows.
    int32_t n_embd = 0;
    std::vector<int32_t> hidden_layers;  // = Batch::capture_layers
    std::vector<int32_t> hidden_rows;    // batch row of each captured row
    std::vector<float> hidden;           // (hidden_rows.size(), hidden_layers.size(), n_embd)

    // Captured row i, layer slot j (index into hidden_layers).
    const float* hidden_at(int i, int j) const {
        return hidden.data() + ((size_t)i * hidden_layers.size() + (size_t)j) * (size_t)n_embd;
    }
    // Batch row r's capture for layer slot j, or nullptr if r was not captured.
    const float* hidden_for_row(int r, int j) const {
        for (size_t i = 0; i < hidden_rows.size(); i++)
            if (hidden_rows[i] == r) return hidden_at((int)i, j);
        return nullptr;
    }

    const float* logits_at(int i) const { return logits.data() + (size_t)i * n_vocab; }
    // Logits of batch row r, or nullptr if that row did not ask for them.
    const float* logits_for_row(int r) const {
        for (size_t i = 0; i < rows.size(); i++)
            if (rows[i] == r) return logits_at((int)i);
        return nullptr;
    }
};

}  // namespace bee
