#include "dns_txt.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <cstring>
#include <stdexcept>

namespace svc::plugins::email {

std::vector<std::string> lookupTxt(const std::string& name, const std::string& server) {
  struct __res_state state;
  std::memset(&state, 0, sizeof state);
  if (res_ninit(&state) != 0) throw std::runtime_error("the resolver could not start");
  struct Closer {
    struct __res_state* s;
    ~Closer() { res_nclose(s); }
  } closer{&state};
  if (!server.empty()) {
    std::string host = server;
    int port = 53;
    std::size_t colon = server.rfind(':');
    if (colon != std::string::npos) {
      host = server.substr(0, colon);
      port = std::stoi(server.substr(colon + 1));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
      throw std::runtime_error("email.dns.server is not an IPv4 host:port");
    }
    state.nsaddr_list[0] = addr;
    state.nscount = 1;
  }
  state.retry = 2;
  state.retrans = 2;
  unsigned char answer[8192];
  int len = res_nquery(&state, name.c_str(), ns_c_in, ns_t_txt, answer, sizeof answer);
  if (len < 0) {
    // NXDOMAIN and "no data" mean the record is not there; anything else is a failed lookup.
    if (state.res_h_errno == HOST_NOT_FOUND || state.res_h_errno == NO_DATA) return {};
    throw std::runtime_error("no answer from the DNS server");
  }
  // res_nquery returns an answer's whole length even when it did not fit the buffer.
  if (static_cast<std::size_t>(len) > sizeof answer) {
    throw std::runtime_error("a DNS answer too large to read");
  }
  ns_msg msg;
  if (ns_initparse(answer, len, &msg) != 0) throw std::runtime_error("a malformed DNS answer");
  std::vector<std::string> out;
  for (int i = 0; i < ns_msg_count(msg, ns_s_an); ++i) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) != 0 || ns_rr_type(rr) != ns_t_txt) continue;
    const unsigned char* p = ns_rr_rdata(rr);
    const unsigned char* end = p + ns_rr_rdlen(rr);
    std::string text;
    while (p < end) {
      unsigned n = *p++;
      if (p + n > end) break;
      text.append(reinterpret_cast<const char*>(p), n);
      p += n;
    }
    out.push_back(text);
  }
  return out;
}

}  // namespace svc::plugins::email
