// server/route_table: the (method, pattern, handler) rows the route groups register. One model: the rows
// are installed on the HTTP server as they are. Router mode: every loaded model keeps its own table, and
// the router's dispatcher for a pattern calls the row of the model a request names.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <httplib.h>

namespace bee::server {

class RouteTable {
public:
    using Handler = httplib::Server::Handler;
    struct Route {
        std::string method;   // "GET", "POST" or "DELETE"
        std::string pattern;  // httplib's: a path or a regex over the path
        Handler handler;
    };

    // note: named as httplib::Server's, so a route group registers on either with the same calls.
    RouteTable& Get(const std::string& pattern, Handler handler);
    RouteTable& Post(const std::string& pattern, Handler handler);
    RouteTable& Delete(const std::string& pattern, Handler handler);

    // The handler of (method, pattern), or null.
    const Handler* find(const std::string& method, const std::string& pattern) const;
    const std::vector<Route>& routes() const { return routes_; }
    // Replaces every row's handler with wrap(row).
    void wrap(const std::function<Handler(const Route&)>& wrap);
    // Registers every row on `svr`, in order.
    void install(httplib::Server& svr) const;

private:
    std::vector<Route> routes_;
};

}  // namespace bee::server
