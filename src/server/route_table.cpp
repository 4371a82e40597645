// server/route_table: rows kept in registration order (httplib matches the first pattern that fits).
#include "server/route_table.h"

namespace bee::server {

RouteTable& RouteTable::Get(const std::string& pattern, Handler handler) {
    routes_.push_back({"GET", pattern, std::move(handler)});
    return *this;
}

RouteTable& RouteTable::Post(const std::string& pattern, Handler handler) {
    routes_.push_back({"POST", pattern, std::move(handler)});
    return *this;
}

RouteTable& RouteTable::Delete(const std::string& pattern, Handler handler) {
    routes_.push_back({"DELETE", pattern, std::move(handler)});
    return *this;
}

const RouteTable::Handler* RouteTable::find(const std::string& method, const std::string& pattern) const {
    for (const Route& r : routes_)
        if (r.method == method && r.pattern == pattern) return &r.handler;
    return nullptr;
}

void RouteTable::wrap(const std::function<Handler(const Route&)>& wrap) {
    for (Route& r : routes_) r.handler = wrap(r);
}

void RouteTable::install(httplib::Server& svr) const {
    for (const Route& r : routes_) {
        if (r.method == "GET") svr.Get(r.pattern, r.handler);
        else if (r.method == "DELETE") svr.Delete(r.pattern, r.handler);
        else svr.Post(r.pattern, r.handler);
    }
}

}  // namespace bee::server
