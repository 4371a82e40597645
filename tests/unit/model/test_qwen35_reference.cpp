// tests/unit/model/test_qwen35_reference: the tiny qwen35 model against llama.cpp (the independent
// implementation; tests/reference/qwen35_reference.py made the data). Teacher-forced logits within a
// tolerance, greedy tokens equal up to the reference's first near-tie. Same K/V type as llama.cpp's default
// (f16).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/engine.h"
#include "model/nextn.h"
#include "qwen35_test_util.h"

namespace bee::test {
namespace {

const std::string kRefFile = std::string(BEE_SOURCE_DIR) + "/tests/reference/data/qwen35/tiny.ref.txt";
const std::string kMtpFile = std::string(BEE_SOURCE_DIR) + "/tests/reference/data/qwen35/tiny.mtp.txt";
// f32 weights on both sides, f16 K/V on both sides; what differs is float summation order (llama.cpp
// prefills the Gated DeltaNet layers in chunks, Bee token by token) and rounding.
constexpr double kLogitTol = 2e-3;
constexpr double kTieGap = 0.01;  // greedy tokens are compared up to a reference margin below this

struct TopRow {
    std::vector<std::pair<int32_t, double>> top;  // best first
};
struct RefPrompt {
    std::vector<int32_t> prompt, greedy;  // greedy: the MTP file's chain (g0 and the drafts)
    std::vector<TopRow> tf, gen;          // gen: the MTP file's steps
};
struct Ref {
    long long bytes = 0;
    double qkv_sum = 0;
    std::vector<RefPrompt> prompts;
};

std::vector<int32_t> read_ids(std::istringstream& in) {
    size_t n = 0;
    in >> n;
    std::vector<int32_t> v(n);
    for (int32_t& x : v) in >> x;
    return v;
}

TopRow read_top(std::istringstream& in) {
    int idx = 0, n = 0;
    in >> idx >> n;
    TopRow r;
    for (int i = 0; i < n; i++) {
        int32_t id;
        double l;
        in >> id >> l;
        r.top.push_back({id, l});
    }
    return r;
}

Ref read_ref(const std::string& path = kRefFile) {
    std::ifstream f(path);
    Ref ref;
    if (!f) return ref;
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string tag;
        in >> tag;
        if (tag == "fingerprint") in >> ref.bytes >> ref.qkv_sum;
        else if (tag == "prompt") ref.prompts.push_back({read_ids(in), {}, {}, {}});
        else if (tag == "tf") ref.prompts.back().tf.push_back(read_top(in));
        else if (tag == "gen" || tag == "step") ref.prompts.back().gen.push_back(read_top(in));
        else if (tag == "greedy" || tag == "chain") ref.prompts.back().greedy = read_ids(in);
    }
    return ref;
}

// The committed outputs belong to the model the fixture wrote (bee gguf synth's qwen35-tiny stream).
::testing::AssertionResult same_model(const Model& m, const Ref& ref) {
    const GgufTensor* t = m.gguf().find_tensor("blk.0.attn_qkv.weight");
    double sum = 0;
    for (int64_t i = 0; i < t->n_elements(); i++) sum += ((const float*)t->data)[i];
    if (std::fabs(sum - ref.qkv_sum) > 1e-6 * std::fabs(ref.qkv_sum) + 1e-6)
        return ::testing::AssertionFailure()
               << "the model differs from the one the reference was made from (blk.0.attn_qkv sum " << sum << ", "
               << ref.qkv_sum << " recorded): bee gguf synth's qwen35-tiny changed; regenerate the data with "
               << "tests/reference/qwen35_reference.py";
    return ::testing::AssertionSuccess();
}

// Checks one row of our logits against the reference's top ids.
void check_row(const float* ours, const TopRow& ref, const std::string& where) {
    for (const auto& [id, l] : ref.top) EXPECT_NEAR(ours[id], l, kLogitTol) << where << ", token " << id;
}

int32_t argmax(const float* l, int n) {
    int best = 0;
    for (int v = 1; v < n; v++)
        if (l[v] > l[best]) best = v;
    return best;
}

TEST(Qwen35Reference, TeacherForcedLogitsMatchLlamaCpp) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const Ref ref = read_ref();
    ASSERT_FALSE(ref.prompts.empty()) << kRefFile << " is missing or empty";
    ASSERT_TRUE(same_model(*m, ref));
    for (size_t p = 0; p < ref.prompts.size(); p++) {
        const RefPrompt& rp = ref.prompts[p];
        EngineParams ep;  // f16 K/V, as llama.cpp's default
        ep.n_ctx = 256;
        ep.n_threads = 2;
        Engine eng(*m, ep);
        Batch b;  // prompt + greedy tokens but the last, one batch
        std::vector<int32_t> seq = rp.prompt;
        seq.insert(seq.end(), rp.greedy.begin(), rp.greedy.end() - 1);
        for (size_t i = 0; i < seq.size(); i++) b.add(seq[i], (int32_t)i, 0, true);
        DecodeOutput out;
        eng.decode(b, out);
        const int n = (int)rp.prompt.size();
        for (int r = 0; r < n; r++)
            check_row(out.logits_for_row(r), rp.tf[r], "prompt " + std::to_string(p) + " row " + std::to_string(r));
        for (size_t i = 1; i < rp.gen.size(); i++)
            check_row(out.logits_for_row(n - 1 + (int)i), rp.gen[i],
                      "prompt " + std::to_string(p) + " greedy step " + std::to_string(i));
    }
}

TEST(Qwen35Reference, GreedyTokensMatchLlamaCppUpToANearTie) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const Ref ref = read_ref();
    ASSERT_FALSE(ref.prompts.empty()) << kRefFile << " is missing or empty";
    ASSERT_TRUE(same_model(*m, ref));
    int compared = 0;
    for (size_t p = 0; p < ref.prompts.size(); p++) {
        const RefPrompt& rp = ref.prompts[p];
        EngineParams ep;
        ep.n_ctx = 256;
        ep.n_threads = 2;
        Engine eng(*m, ep);
        Batch b;
        for (size_t i = 0; i < rp.prompt.size(); i++) b.add(rp.prompt[i], (int32_t)i, 0, i + 1 == rp.prompt.size());
        DecodeOutput out;
        eng.decode(b, out);
        int32_t pos = (int32_t)rp.prompt.size();
        for (size_t i = 0; i < rp.greedy.size(); i++) {
            const TopRow& g = rp.gen[i];
            if (g.top[0].second - g.top[1].second < kTieGap) break;  // a near-tie: later tokens may differ
            const int32_t t = argmax(out.logits.data(), out.n_vocab);
            ASSERT_EQ(t, rp.greedy[i]) << "prompt " << p << ", greedy step " << i;
            compared++;
            b.clear();
            b.add(t, pos++, 0, true);
            eng.decode(b, out);
        }
    }
    EXPECT_GT(compared, 40);
}

// The MTP block (model/nextn.h) as llama.cpp's draft-mtp context runs it: catch-up rows over the prompt (token
// k with the trunk's post-norm h of row k - 1), then a greedy chain from the target's argmax, each step fed
// the head's own h. Logits of every step within the tolerance, the chain's tokens equal up to a near-tie.
TEST(Qwen35Reference, MtpHeadMatchesLlamaCpp) {
    const Model* m = qwen35_tiny();
    if (!m) return;
    const Ref ref = read_ref(kMtpFile);
    ASSERT_FALSE(ref.prompts.empty()) << kMtpFile << " is missing or empty";
    ASSERT_TRUE(same_model(*m, ref));
    const int e = m->hparams().n_embd, nv = m->hparams().n_vocab;
    int compared = 0;
    for (size_t p = 0; p < ref.prompts.size(); p++) {
        const RefPrompt& rp = ref.prompts[p];
        const int n = (int)rp.prompt.size();
        EngineParams ep;
        ep.n_ctx = 256;
        ep.n_threads = 2;
        Engine eng(*m, ep);
        Batch b;
        for (int i = 0; i < n; i++) b.add(rp.prompt[i], i, 0, i == n - 1);
        b.capture_layers = {m->hparams().n_layer};
        DecodeOutput out;
        eng.decode(b, out);
        ASSERT_EQ(argmax(out.logits_at(0), nv), rp.greedy[0]) << "prompt " << p << ": the target's next token";
        ThreadPool pool(2);
        NextnHead head(*m, 256, pool);
        std::vector<float> h((size_t)n * e), h_in((size_t)n * e, 0.0f), h_out((size_t)n * e), logits;
        std::vector<int32_t> pos(n);
        for (int i = 0; i < n; i++) {
            head.trunk_h(out.hidden_for_row(i, 0), h.data() + (size_t)i * e);
            if (i > 0) std::copy(h.begin() + (i - 1) * e, h.begin() + i * e, h_in.begin() + i * e);
            pos[i] = i;
        }
        const std::vector<uint8_t> none(n, 0);
        head.decode(rp.prompt.data(), pos.data(), h_in.data(), n, none.data(), h_out.data(), logits);
        EXPECT_TRUE(logits.empty());
        std::vector<float> cur(h.end() - e, h.end()), next((size_t)e);
        int32_t tok = rp.greedy[0];
        for (size_t i = 0; i < rp.gen.size(); i++) {
            const int32_t at = n + (int32_t)i;
            const uint8_t want = 1;
            logits.clear();
            head.decode(&tok, &at, cur.data(), 1, &want, next.data(), logits);
            check_row(logits.data(), rp.gen[i], "prompt " + std::to_string(p) + " MTP step " + std::to_string(i));
            const TopRow& g = rp.gen[i];
            if (g.top[0].second - g.top[1].second < kTieGap) break;
            tok = argmax(logits.data(), nv);
            ASSERT_EQ(tok, rp.greedy[i + 1]) << "prompt " << p << ", MTP step " << i;
            compared++;
            cur.swap(next);
        }
    }
    EXPECT_GT(compared, 10);
}

}  // namespace
}  // namespace bee::test
