// server/vertex: Vertex AI's custom-container protocol, on when AIP_MODE=PREDICTION (as llama-server):
// AIP_HTTP_PORT (default 8080) replaces --port, AIP_HEALTH_ROUTE answers as /health, and AIP_PREDICT_ROUTE
// (default /predict) takes {"instances": [...]}: each instance names the endpoint it is a request for in
// "@requestFormat" (a path, or its camelCase name: "chatCompletions" for /v1/chat/completions) and the
// reply is {"predictions": [one reply per instance, in order]}. Instances run concurrently; streaming is off.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>

namespace bee::server {

struct VertexParams {
    bool enabled = false;
    std::string health_route;  // empty: none beyond /health
    std::string predict_route = "/predict";
    int port = 8080;
};

// From the AIP_* environment variables; throws bee::Error for an AIP_HTTP_PORT that is not a port.
VertexParams vertex_params_from_env();

// "/v1/chat/completions" -> "chatCompletions", "/apply-template" -> "applyTemplate" (llama-server's names).
std::string vertex_format_name(const std::string& path);

// Registers the predict (and health) route over `routes`: (path, handler) of every endpoint a prediction
// may name, first wins. Throws bee::Error when the predict route is one of them.
void register_vertex_routes(httplib::Server& svr, const VertexParams& vp,
                            const std::vector<std::pair<std::string, httplib::Server::Handler>>& routes);

}  // namespace bee::server
