// server/json_body: the request body parsed into JSON with a bounded nesting depth, in linear time.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "server/http_util.h"

namespace bee::server {

namespace {

// note: nlohmann's own DOM parser into ordered_json looks every key up linearly (an object of 10,000
// keys costs seconds) and has no depth limit; its SAX parser is iterative, so this builder adds both:
// objects of more than a few keys get a hash index of their keys, and nesting stops at the limit.
// A repeated key keeps its first position and its last value, as nlohmann's parser does.
class BoundedBuilder {
public:
    BoundedBuilder(Json& root, int max_depth) : root_(root), max_depth_(max_depth) {}

    bool null() { return put(Json(nullptr)); }
    bool boolean(bool v) { return put(Json(v)); }
    bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
    bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
    bool number_float(Json::number_float_t v, const std::string&) { return put(Json(v)); }
    bool string(std::string& v) { return put(Json(std::move(v))); }
    bool binary(Json::binary_t&) { return put(Json(nullptr)); }
    bool start_object(size_t) { return open(Json::object()); }
    bool start_array(size_t) { return open(Json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(std::string& k) {
        Frame& f = stack_.back();
        Json::object_t& obj = f.value->get_ref<Json::object_t&>();
        if (f.index) {
            auto [it, added] = f.index->emplace(k, obj.size());
            if (!added) return slot((obj.begin() + (ptrdiff_t)it->second)->second);
        } else {
            for (auto& kv : obj)
                if (kv.first == k) return slot(kv.second);
            if (obj.size() >= kIndexFrom) {
                f.index = std::make_unique<std::unordered_map<std::string, size_t>>();
                for (size_t i = 0; i < obj.size(); i++) f.index->emplace((obj.begin() + (ptrdiff_t)i)->first, i);
                f.index->emplace(k, obj.size());
            }
        }
        obj.emplace_back(std::move(k), Json());
        return slot(obj.back().second);
    }
    bool parse_error(size_t at, const std::string&, const nlohmann::detail::exception& e) {
        error_ = strfmt("the request body is not valid JSON: %s", e.what());
        (void)at;
        return false;
    }

    const std::string& error() const { return error_; }

private:
    static constexpr size_t kIndexFrom = 16;
    struct Frame {
        Json* value;
        std::unique_ptr<std::unordered_map<std::string, size_t>> index;
    };

    bool slot(Json& v) {
        pending_ = &v;
        return true;
    }
    // Places a value in the innermost container (or as the root); returns where it went.
    Json* place(Json&& v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Json* top = stack_.back().value;
        if (top->is_array()) {
            top->get_ref<Json::array_t&>().push_back(std::move(v));
            return &top->get_ref<Json::array_t&>().back();
        }
        *pending_ = std::move(v);
        return pending_;
    }
    bool put(Json&& v) {
        place(std::move(v));
        return true;
    }
    bool open(Json&& v) {
        if ((int)stack_.size() >= max_depth_) {
            error_ = strfmt("the request JSON nests deeper than %d levels of arrays and objects (the limit is %d)",
                            max_depth_, max_depth_);
            return false;
        }
        stack_.push_back(Frame{place(std::move(v)), nullptr});
        return true;
    }
    bool close() {
        stack_.pop_back();
        return true;
    }

    Json& root_;
    int max_depth_;
    std::vector<Frame> stack_;
    Json* pending_ = nullptr;
    std::string error_;
};

}  // namespace

Json parse_json_bounded(const std::string& text, int max_depth) {
    Json root;
    BoundedBuilder b(root, max_depth);
    bool ok = false;
    try {
        ok = Json::sax_parse(text, &b);
    } catch (const nlohmann::json::exception& e) {
        bad_request("the request body is not valid JSON: %s", e.what());
    }
    if (!ok) bad_request("%s", b.error().empty() ? "the request body is not valid JSON" : b.error().c_str());
    return root;
}

Json parse_body(const httplib::Request& req) {
    Json j = parse_json_bounded(req.body, kMaxJsonDepth);
    if (!j.is_object()) bad_request("the request body must be a JSON object");
    return j;
}

}  // namespace bee::server
