// server/vertex: each instance becomes an internal request (same headers, the instance less
// "@requestFormat" as its body) handed to the endpoint's own handler; its JSON reply (or error envelope)
// is the prediction.
#include "server/vertex.h"

#include <cctype>
#include <cstdlib>
#include <future>
#include <map>

#include "base/error.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace bee::server {

namespace {

std::string env_or(const char* name, const std::string& fallback, bool leading_slash = false) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    std::string s = v;
    if (leading_slash && s[0] != '/') s.insert(s.begin(), '/');
    return s;
}

Json error_entry(int status, const std::string& type, const std::string& message) {
    return Json{{"error", {{"code", status}, {"message", message}, {"type", type}}}};
}

constexpr size_t kMaxInstances = 128;  // as llama-server

}  // namespace

VertexParams vertex_params_from_env() {
    VertexParams vp;
    vp.enabled = env_or("AIP_MODE", "") == "PREDICTION";
    vp.health_route = env_or("AIP_HEALTH_ROUTE", "", true);
    vp.predict_route = env_or("AIP_PREDICT_ROUTE", "/predict", true);
    const std::string port = env_or("AIP_HTTP_PORT", "8080");
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (vp.enabled && (*end || p < 1 || p > 65535))
        fail("AIP_HTTP_PORT '%s' is not a port number (1-65535)", port.c_str());
    vp.port = (int)p;
    return vp;
}

std::string vertex_format_name(const std::string& path) {
    std::string s = path.rfind("/v1", 0) == 0 ? path.substr(3) : path;
    if (!s.empty() && s[0] == '/') s.erase(0, 1);
    std::string out;
    bool upper = false;
    for (const char c : s) {
        if (c == ':') break;
        if (c == '/' || c == '-' || c == '_') {
            upper = true;
            continue;
        }
        out += upper ? (char)std::toupper((unsigned char)c) : c;
        upper = false;
    }
    return out;
}

void register_vertex_routes(httplib::Server& svr, const VertexParams& vp,
                            const std::vector<std::pair<std::string, httplib::Server::Handler>>& routes) {
    std::map<std::string, httplib::Server::Handler> by_path, by_name;
    for (const auto& [path, h] : routes) {
        by_path.emplace(path, h);
        by_name.emplace(vertex_format_name(path), h);
    }
    if (by_path.count(vp.predict_route))
        fail("AIP_PREDICT_ROUTE=%s is one of the server's own routes: choose another path", vp.predict_route.c_str());
    if (!vp.health_route.empty()) {
        auto ok = [](const httplib::Request&, httplib::Response& res) { send_json(res, {{"status", "ok"}}); };
        svr.Get(vp.health_route, by_path.count("/health") ? by_path.at("/health") : guarded(ok));
    }
    auto predict = [by_path, by_name](const httplib::Request& req, httplib::Response& res) {
        Json body;
        try {
            body = Json::parse(req.body);
        } catch (const std::exception& e) {
            throw HttpError(400, "invalid_request_error", std::string("the request body is not JSON: ") + e.what());
        }
        if (!body.is_object()) throw HttpError(400, "invalid_request_error", "request body must be a JSON object");
        if (!body.contains("instances") || !body["instances"].is_array())
            throw HttpError(400, "invalid_request_error", "request body must include an array field named instances");
        const Json& instances = body["instances"];
        if (instances.size() > kMaxInstances)
            throw HttpError(400, "invalid_request_error",
                            strfmt("instances array exceeds maximum size of %zu", kMaxInstances));
        auto run_one = [&](const Json& inst) -> Json {
            if (!inst.is_object())
                return error_entry(400, "invalid_request_error", "each instance must be a JSON object");
            if (!inst.contains("@requestFormat") || !inst["@requestFormat"].is_string())
                return error_entry(400, "invalid_request_error", "each instance must include a string @requestFormat");
            Json payload = inst;
            const std::string format = payload["@requestFormat"].get<std::string>();
            payload.erase("@requestFormat");
            if (payload.contains("stream")) payload["stream"] = false;  // a prediction is one JSON reply
            auto it = by_name.find(format);
            if (it == by_name.end()) it = by_path.find(format);
            if (it == by_path.end())
                return error_entry(400, "invalid_request_error", "no handler registered for @requestFormat: " + format);
            httplib::Request inner;
            inner.method = "POST";
            inner.path = format[0] == '/' ? format : "/" + format;
            inner.headers = req.headers;
            inner.headers.erase("Content-Length");
            inner.headers.erase("Transfer-Encoding");
            inner.body = payload.dump();
            inner.remote_addr = req.remote_addr;
            inner.remote_port = req.remote_port;
            inner.local_addr = req.local_addr;
            inner.local_port = req.local_port;
            httplib::Response out;
            try {
                it->second(inner, out);
            } catch (const std::exception& e) {
                return error_entry(500, "server_error", e.what());
            }
            if (out.content_provider_)
                return error_entry(400, "invalid_request_error", "predict route does not support streaming responses");
            if (out.body.empty()) return nullptr;
            try {
                return Json::parse(out.body);
            } catch (...) {
                return out.body;
            }
        };
        std::vector<std::future<Json>> replies;
        for (const Json& inst : instances) replies.push_back(std::async(std::launch::async, run_one, std::cref(inst)));
        Json predictions = Json::array();
        for (auto& f : replies) predictions.push_back(f.get());
        send_json(res, {{"predictions", predictions}});
    };
    svr.Post(vp.predict_route, guarded(predict));
}

}  // namespace bee::server
