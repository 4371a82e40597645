// server/wire_embeddings: the wire shapes of /v1/embeddings (OpenAI), /embedding and /embeddings
// (llama-server's native ones) and /rerank (Jina's / Cohere's shape, or Hugging Face TEI's): a body read
// into its inputs' tokens and options, and the reply built from the engine's values.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "server/context.h"
#include "server/http_util.h"

namespace bee::server {

// An embeddings request ready to run.
struct EmbeddingsRequest {
    std::vector<std::vector<int32_t>> inputs;  // each input's tokens
    bool oai = true;                           // OpenAI's reply shape; false: llama-server's native one
    bool base64 = false;                       // encoding_format "base64" (OpenAI shape only)
    int64_t normalize = 2;                     // embd_normalize: -1 none, 0 max absolute, 2 Euclidean, else p-norm
    std::string model;                         // the model name the reply reports
};
// `input` (or llama-server's `content`, which answers in the native shape), encoding_format, embd_normalize,
// model. `oai`: the route's shape (/v1/embeddings).
EmbeddingsRequest read_embeddings_request(const ServerContext& ctx, const Json& body, bool oai);
// The reply: OpenAI's {model, object: "list", usage, data: [{embedding, index, object}]} (the first row of
// each input, float or base64), or the native [{index, embedding: [rows]}]. values[i] holds input i's
// (rows, width) floats, already normalized.
Json embeddings_json(const EmbeddingsRequest& r, const std::vector<std::vector<float>>& values, size_t width);

// A rerank request ready to run.
struct RerankRequest {
    std::vector<std::vector<int32_t>> inputs;  // one per document: the query and the document in the reranker's format
    std::vector<std::string> documents;
    int64_t top_n = 0;  // results kept, best first
    bool tei = false;   // Hugging Face TEI's shape (`texts` in, a bare array out)
    bool return_text = false, return_documents = false;
    std::string model;
};
RerankRequest read_rerank_request(const ServerContext& ctx, const Json& body);
// The reply: results [{index, relevance_score (TEI: score), text?, document?}] best first, top_n of them,
// bare (TEI) or in {model, object: "list", usage, results}. scores[i] is document i's.
Json rerank_json(const RerankRequest& r, const std::vector<float>& scores);

}  // namespace bee::server
