// server/wire_embeddings: embeddings and rerank requests (inputs tokenized, options read) and replies.
#include "server/wire_embeddings.h"

#include <algorithm>

#include "server/wire_generation.h"

namespace bee::server {

namespace {

constexpr size_t kMaxInputs = 2048;  // inputs per request (OpenAI's limit for one embeddings call)

// `input` / `content` as llama-server reads it: a string, token ids, or a mix is one input; an array of
// strings, token arrays or mixed arrays is several.
std::vector<std::vector<int32_t>> tokenize_inputs(const Json& input, const Tokenizer& tok) {
    const char* shape = "'input' must be a string, an array of strings, or an array of token arrays";
    if (input.is_string()) return {tokenize_prompt(input, tok)};
    if (!input.is_array() || input.empty()) bad_request("%s", shape);
    if (std::any_of(input.begin(), input.end(), [](const Json& x) { return x.is_number(); }))
        return {tokenize_prompt(input, tok)};  // one prompt of ids (or ids and strings mixed)
    if (input.size() > kMaxInputs)
        bad_request("'input' holds %zu inputs; at most %zu per request", input.size(), kMaxInputs);
    std::vector<std::vector<int32_t>> out;
    for (const Json& x : input) {
        if (!x.is_string() && !x.is_array()) bad_request("%s", shape);
        if (x.is_array() && x.empty()) bad_request("Input content cannot be empty");
        if (x.is_array() &&
            std::any_of(x.begin(), x.end(), [](const Json& y) { return y.is_array() || y.is_object(); }))
            bad_request("%s", shape);
        out.push_back(tokenize_prompt(x, tok));
    }
    return out;
}

// A reranker's input for one document: the model's `rerank` template when it has one ({query} and
// {document} replaced, special tokens parsed), else [BOS] query [EOS] [SEP] document [EOS], each marker
// where the vocabulary adds it (llama.cpp's format; SEP stands in for a missing EOS).
std::vector<int32_t> rerank_tokens(const ServerContext& ctx, const std::string& tmpl, const std::string& query,
                                   const std::string& doc) {
    const Tokenizer& tok = ctx.tokenizer();
    if (!tmpl.empty()) {
        std::string text;
        for (size_t i = 0; i < tmpl.size();) {
            if (tmpl.compare(i, 7, "{query}") == 0) {
                text += query;
                i += 7;
            } else if (tmpl.compare(i, 10, "{document}") == 0) {
                text += doc;
                i += 10;
            } else {
                text += tmpl[i++];
            }
        }
        return tok.encode(text, false, true);
    }
    const GgufFile& f = ctx.model->gguf();
    const int32_t sep = (int32_t)f.get_int("tokenizer.ggml.seperator_token_id", -1);
    const bool add_sep = f.get_bool("tokenizer.ggml.add_sep_token", false) && sep >= 0;
    const int32_t eos = tok.eos() >= 0 ? tok.eos() : sep;
    const bool add_eos = tok.add_eos() && eos >= 0;
    std::vector<int32_t> out;
    if (tok.add_bos() && tok.bos() >= 0) out.push_back(tok.bos());
    for (int32_t id : tok.encode(query, false, false)) out.push_back(id);
    if (add_eos) out.push_back(eos);
    if (add_sep) out.push_back(sep);
    for (int32_t id : tok.encode(doc, false, false)) out.push_back(id);
    if (add_eos) out.push_back(eos);
    return out;
}

}  // namespace

EmbeddingsRequest read_embeddings_request(const ServerContext& ctx, const Json& body, bool oai) {
    EmbeddingsRequest r;
    r.oai = oai;
    Json input;
    if (body.contains("input")) {
        input = body["input"];
    } else if (body.contains("content")) {
        input = body["content"];
        r.oai = false;  // "content" is llama-server's native field: native response shape
    } else {
        bad_request("\"input\" or \"content\" must be provided");
    }
    if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
        const Json& f = body["encoding_format"];
        if (!f.is_string() || (f != "float" && f != "base64"))
            bad_request("The format to return the embeddings in. Can be either float or base64");
        r.base64 = f == "base64";
    }
    r.normalize = get_int(body, "embd_normalize", ctx.params.embd_normalize, -1, 64);
    r.inputs = tokenize_inputs(input, ctx.tokenizer());
    r.model = get_string(body, "model", ctx.model_name);
    return r;
}

Json embeddings_json(const EmbeddingsRequest& r, const std::vector<std::vector<float>>& values, size_t width) {
    Json data = Json::array();
    int64_t n_tokens = 0;
    for (size_t i = 0; i < values.size(); i++) {
        const std::vector<float>& v = values[i];
        n_tokens += (int64_t)r.inputs[i].size();
        if (r.oai) {
            Json e = {{"embedding", nullptr}, {"index", i}, {"object", "embedding"}};
            if (r.base64) {
                e["embedding"] = base64_encode((const uint8_t*)v.data(), width * sizeof(float));
                e["encoding_format"] = "base64";
            } else {
                e["embedding"] = std::vector<float>(v.begin(), v.begin() + (std::ptrdiff_t)width);
            }
            data.push_back(std::move(e));
            continue;
        }
        Json rows_json = Json::array();
        for (size_t row = 0; row < v.size() / width; row++)
            rows_json.push_back(std::vector<float>(v.begin() + (std::ptrdiff_t)(row * width),
                                                   v.begin() + (std::ptrdiff_t)((row + 1) * width)));
        data.push_back({{"index", i}, {"embedding", std::move(rows_json)}});
    }
    if (!r.oai) return data;
    return {{"model", r.model},
            {"object", "list"},
            {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
            {"data", std::move(data)}};
}

RerankRequest read_rerank_request(const ServerContext& ctx, const Json& body) {
    RerankRequest r;
    r.tei = body.contains("texts");  // Hugging Face TEI's shape; else Jina's / Cohere's
    if (!body.contains("query")) bad_request("\"query\" must be provided");
    if (!body["query"].is_string()) bad_request("\"query\" must be a string");
    const std::string query = body["query"];
    const Json& docs_json = body.contains("documents") ? body["documents"] : r.tei ? body["texts"] : Json();
    if (!docs_json.is_array() || docs_json.empty() ||
        !std::all_of(docs_json.begin(), docs_json.end(), [](const Json& d) { return d.is_string(); }))
        bad_request("\"documents\" must be a non-empty string array");
    if (docs_json.size() > kMaxInputs)
        bad_request("\"documents\" holds %zu documents; at most %zu", docs_json.size(), kMaxInputs);
    r.documents = docs_json.get<std::vector<std::string>>();
    r.top_n = get_int(body, "top_n", (int64_t)r.documents.size(), 0, INT32_MAX);
    r.return_text = r.tei && get_bool(body, "return_text", false);
    r.return_documents = get_bool(body, "return_documents", false);
    const std::string tmpl = ctx.model->gguf().get_str("tokenizer.chat_template.rerank", "");
    for (const std::string& d : r.documents) r.inputs.push_back(rerank_tokens(ctx, tmpl, query, d));
    r.model = get_string(body, "model", ctx.model_name);
    return r;
}

Json rerank_json(const RerankRequest& r, const std::vector<float>& scores) {
    const char* label = r.tei ? "score" : "relevance_score";
    std::vector<size_t> order(r.documents.size());
    int64_t n_tokens = 0;
    for (size_t i = 0; i < r.documents.size(); i++) {
        order[i] = i;
        n_tokens += (int64_t)r.inputs[i].size();
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    order.resize(std::min<size_t>(order.size(), (size_t)r.top_n));
    Json results = Json::array();
    for (size_t i : order) {
        Json j = {{"index", i}, {label, scores[i]}};
        if (r.return_text) j["text"] = r.documents[i];
        if (r.return_documents) j["document"] = {{"text", r.documents[i]}};
        results.push_back(std::move(j));
    }
    if (r.tei) return results;
    return {{"model", r.model},
            {"object", "list"},
            {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
            {"results", std::move(results)}};
}

}  // namespace bee::server
