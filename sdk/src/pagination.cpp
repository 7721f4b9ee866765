#include <svc/sdk/pagination.h>

#include <Poco/NumberParser.h>
#include <Poco/URI.h>

#include <algorithm>

namespace svc::sdk {

PageRequest pageRequest(const Request& request) {
  PageRequest page;
  if (auto l = request.queryParam("limit")) {
    if (!Poco::NumberParser::tryParse(*l, page.limit) || page.limit < 1) {
      throw HttpError::invalid("limit", "must be a positive integer");
    }
    page.limit = std::min(page.limit, 200);
  }
  if (auto o = request.queryParam("offset")) {
    if (!Poco::NumberParser::tryParse(*o, page.offset) || page.offset < 0) {
      throw HttpError::invalid("offset", "must be a non-negative integer");
    }
  }
  return page;
}

Poco::JSON::Object::Ptr pageBody(const Request& request, const PageRequest& page, long count,
                                 const Poco::JSON::Array::Ptr& results) {
  auto link = [&](long offset) {
    Poco::URI uri(request.base_url + request.path);
    for (const auto& [name, value] : request.query) {
      if (name != "limit" && name != "offset") uri.addQueryParameter(name, value);
    }
    uri.addQueryParameter("limit", std::to_string(page.limit));
    uri.addQueryParameter("offset", std::to_string(offset));
    return uri.toString();
  };
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("count", count);
  body->set("next", page.offset + page.limit < count
                        ? Poco::Dynamic::Var(link(page.offset + page.limit))
                        : Poco::Dynamic::Var());
  body->set("previous", page.offset > 0
                            ? Poco::Dynamic::Var(link(std::max(0, page.offset - page.limit)))
                            : Poco::Dynamic::Var());
  body->set("results", results);
  return body;
}

CappedCount cappedCount(long exact_limit, const PageRequest& page,
                        const std::function<long(std::int64_t probe)>& count_up_to) {
  const long cap = std::max<long>(exact_limit, static_cast<long>(page.offset) + page.limit + 1);
  const long n = count_up_to(static_cast<std::int64_t>(cap) + 1);  // 64 bits: offset near INT_MAX
  return {std::min(n, cap), n <= cap};
}

}  // namespace svc::sdk
