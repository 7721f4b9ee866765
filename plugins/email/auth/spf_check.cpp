// SPF through libspf2, its DNS layer replaced by ours (SPF_dns_server_t.lookup).
#include "auth/checks.h"

#include <Poco/String.h>

#include <arpa/inet.h>
#include <netinet/in.h>

extern "C" {
#include <spf2/spf.h>
#include <spf2/spf_dns.h>
}

#include <netdb.h>

#include <cstring>
#include <mutex>

namespace svc::plugins::email {

namespace {

SPF_dns_rr_t* lookup(SPF_dns_server_t* layer, const char* domain, ns_type type, int) {
  // The SPF record type (99) is obsolete (RFC 7208 section 3.1: TXT only); libspf2 still asks
  // for it first, which would double every lookup and every DNS timeout.
  if (type == ns_t_spf) return SPF_dns_rr_new_init(layer, domain, type, 0, NO_DATA);
  auto* dns = static_cast<DnsResolver*>(layer->hook);
  const DnsAnswer a = dns->query(domain, type);
  SPF_dns_stat_t herrno = TRY_AGAIN;  // libspf2 reads it as temperror
  switch (a.status) {
    case DnsAnswer::Status::kOk:
      herrno = NETDB_SUCCESS;
      break;
    case DnsAnswer::Status::kNotFound:
      herrno = HOST_NOT_FOUND;
      break;
    case DnsAnswer::Status::kNoData:
      herrno = NO_DATA;
      break;
    case DnsAnswer::Status::kFailed:
      break;
  }
  SPF_dns_rr_t* rr = SPF_dns_rr_new_init(layer, domain, type, static_cast<int>(a.ttl), herrno);
  if (rr == nullptr || herrno != NETDB_SUCCESS) return rr;
  int n = 0;
  for (const auto& record : a.records) {
    const bool text = type == ns_t_txt || type == ns_t_mx || type == ns_t_ptr;
    const std::size_t size = text ? record.size() + 1 : record.size();
    if (SPF_dns_rr_buf_realloc(rr, n, size) != SPF_E_SUCCESS) break;
    std::memcpy(rr->rr[n], record.data(), record.size());
    if (text) reinterpret_cast<char*>(rr->rr[n])[record.size()] = '\0';
    rr->num_rr = ++n;
  }
  return rr;
}

void quiet(const char*, int, const char*) {}

// One libspf2 server per thread, made at its first check (again if that failed): making one asks
// the host's name and compiles the default explanation, a tenth of an SPF check. Each check
// points the DNS layer at its resolver.
struct ThreadServer {
  SPF_dns_server_t layer{};
  SPF_server_t* server = nullptr;
  ThreadServer() {
    layer.lookup = lookup;
    layer.name = "svc";
  }
  ~ThreadServer() {
    if (server != nullptr) SPF_server_free(server);  // the layer has no destroy: it is ours
  }
  ThreadServer(const ThreadServer&) = delete;
  ThreadServer& operator=(const ThreadServer&) = delete;
};

// SPF_request_query_mailfrom, less its first line: "localhost always gets a free ride" (a pass
// for 127.0.0.0/8 and ::1 whatever the domain). RFC 7208 has no such rule; here it would let any
// process on this host pass as any domain. The rest is the library's own steps, in its order.
SPF_response_t* queryMailFrom(SPF_server_t* server, SPF_request_t* request) {
  SPF_response_t* response = SPF_response_new(request);
  if (response == nullptr) return nullptr;
  request->cur_dom = request->use_helo ? request->helo_dom : request->env_from_dp;
  SPF_record_t* record = nullptr;
  const SPF_errcode_t err = SPF_server_get_record(server, request, response, &record);
  if (err != SPF_E_SUCCESS) {  // no record, or a DNS failure
    if (record != nullptr) SPF_record_free(record);
    // Debian's libspf2 leaves the result unset after a DNS failure: it is a temperror.
    const SPF_result_t result = err == SPF_E_DNS_ERROR ? SPF_RESULT_TEMPERROR : response->result;
    SPF_i_done(response, result, response->reason, err);
    return response;
  }
  response->spf_record_exp = record;
  SPF_record_interpret(record, request, response, 0);
  SPF_record_free(record);
  response->spf_record_exp = nullptr;
  return response;
}

}  // namespace

SpfOutcome checkSpf(DnsResolver& dns, const std::string& client_ip, const std::string& helo,
                    const std::string& mail_from) {
  static std::once_flag once;
  std::call_once(once, [] {
    // libspf2 prints warnings to stderr by default; its errors (internal faults) stay as they are.
    SPF_warning_handler = quiet;
    SPF_info_handler = quiet;
    SPF_debug_handler = quiet;
  });
  SpfOutcome out;
  out.client_ip = client_ip;
  out.helo = helo;
  out.mail_from = mail_from;
  const std::size_t at = mail_from.rfind('@');
  out.domain = Poco::toLower(at == std::string::npos ? helo : mail_from.substr(at + 1));
  thread_local ThreadServer mine;
  if (mine.server == nullptr) mine.server = SPF_server_new_dns(&mine.layer, 0);
  mine.layer.hook = &dns;
  SPF_server_t* server = mine.server;
  if (server == nullptr) {
    out.result = "temperror";
    return out;
  }
  SPF_request_t* request = SPF_request_new(server);
  SPF_response_t* response = nullptr;
  const bool v6 = client_ip.find(':') != std::string::npos;
  const std::string sender = at == std::string::npos ? "postmaster@" + helo : mail_from;
  if ((v6 ? SPF_request_set_ipv6_str(request, client_ip.c_str())
          : SPF_request_set_ipv4_str(request, client_ip.c_str())) != SPF_E_SUCCESS) {
    out.result = "permerror";
  } else if (!helo.empty() && SPF_request_set_helo_dom(request, helo.c_str()) != SPF_E_SUCCESS) {
    out.result = "permerror";
  } else if (SPF_request_set_env_from(request, sender.c_str()) != SPF_E_SUCCESS) {
    out.result = "permerror";  // not a domain SPF can check (an address literal, say)
  } else {
    response = queryMailFrom(server, request);
    if (response != nullptr) {
      switch (SPF_response_result(response)) {
        case SPF_RESULT_PASS:
          out.result = "pass";
          break;
        case SPF_RESULT_FAIL:
          out.result = "fail";
          break;
        case SPF_RESULT_SOFTFAIL:
          out.result = "softfail";
          break;
        case SPF_RESULT_NEUTRAL:
          out.result = "neutral";
          break;
        case SPF_RESULT_NONE:
          out.result = "none";
          break;
        case SPF_RESULT_TEMPERROR:
          out.result = "temperror";
          break;
        default:
          out.result = "permerror";
          break;
      }
    } else {
      out.result = "temperror";
    }
  }
  if (response != nullptr) SPF_response_free(response);
  SPF_request_free(request);
  mine.layer.hook = nullptr;
  return out;
}

}  // namespace svc::plugins::email
