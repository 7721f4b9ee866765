#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>

#include <Poco/Net/DNS.h>
#include <Poco/Net/HostEntry.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace svc::sdk {

bool isValidDomain(std::string_view domain) {
  if (domain.empty() || domain.size() > 253) return false;
  int labels = 0;
  std::size_t start = 0;
  while (start <= domain.size()) {
    std::size_t dot = domain.find('.', start);
    std::string_view label =
        domain.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    ++labels;
    if (dot == std::string_view::npos) {
      // The top-level label is not all digits (that would be an IP address).
      if (std::all_of(label.begin(), label.end(),
                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return false;
      break;
    }
    start = dot + 1;
  }
  return labels >= 2;
}

bool isDotAtomLocalPart(std::string_view local) {
  if (local.empty() || local.size() > 64) return false;
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos)
    return false;
  static const std::string atext = "!#$%&'*+-/=?^_`{|}~.";
  for (char c : local) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && atext.find(c) == std::string::npos)
      return false;
  }
  return true;
}

bool isValidEmailAddress(std::string_view address) {
  if (address.size() > 254) return false;
  std::size_t at = address.rfind('@');
  if (at == std::string_view::npos) return false;
  return isDotAtomLocalPart(address.substr(0, at)) && isValidDomain(address.substr(at + 1));
}

std::optional<std::string> normalizeE164(const std::string& text) {
  std::string digits;
  bool plus = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && i == 0) {
      plus = true;
    } else if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c != ' ' && c != '-' && c != '.' && c != '(' && c != ')') {
      return std::nullopt;
    }
  }
  if (!plus || digits.size() < 8 || digits.size() > 15 || digits[0] == '0') return std::nullopt;
  return "+" + digits;
}

namespace {

// What a block of addresses is to a call svcd makes on a client's behalf.
enum class Reach {
  kPublic,    // globally reachable: may be called
  kInternal,  // not globally reachable: refused
  kEmbedded,  // an IPv6 form of an IPv4 address (its last 32 bits): judged as that address
};

struct Block {
  const char* network;
  unsigned prefix;
  Reach reach;
};

// The public-address rule, whole. An address takes the reach of the longest block that holds it,
// public when none does. The blocks are the IANA IPv4 and IPv6 Special-Purpose Address
// Registries' entries whose "Globally Reachable" is false (RFC 6890, RFC 8190 and the entries
// added since, to RFC 9637), multicast, the IPv6 space outside global unicast, and the IPv6
// forms that carry an IPv4 address. Choices beyond the registries are marked "(choice)".
constexpr Block kBlocks[] = {
    {"0.0.0.0", 8, Reach::kInternal},       // "this network"
    {"10.0.0.0", 8, Reach::kInternal},      // private use (RFC 1918)
    {"100.64.0.0", 10, Reach::kInternal},   // shared address space: carrier-grade NAT
    {"127.0.0.0", 8, Reach::kInternal},     // loopback
    {"169.254.0.0", 16, Reach::kInternal},  // link-local: cloud metadata services live here
    {"172.16.0.0", 12, Reach::kInternal},   // private use
    // IETF protocol assignments. (choice) All of it, although the registry marks 192.0.0.9 (PCP
    // anycast) and 192.0.0.10 (TURN anycast) globally reachable: an anycast protocol address is
    // answered by the nearest such server, for PCP the operator's own NAT gateway, and no
    // webhook receiver lives there.
    {"192.0.0.0", 24, Reach::kInternal},
    {"192.0.2.0", 24, Reach::kInternal},        // documentation (TEST-NET-1)
    {"192.88.99.0", 24, Reach::kInternal},      // deprecated 6to4 relay anycast (RFC 7526)
    {"192.168.0.0", 16, Reach::kInternal},      // private use
    {"198.18.0.0", 15, Reach::kInternal},       // benchmarking
    {"198.51.100.0", 24, Reach::kInternal},     // documentation (TEST-NET-2)
    {"203.0.113.0", 24, Reach::kInternal},      // documentation (TEST-NET-3)
    {"224.0.0.0", 4, Reach::kInternal},         // multicast (RFC 5771)
    {"240.0.0.0", 4, Reach::kInternal},         // reserved
    {"255.255.255.255", 32, Reach::kInternal},  // limited broadcast

    // IANA gives out global unicast from 2000::/3 only; the rest is reserved by the IETF or has
    // the local uses named below. These three rows hold those (and whatever the registry adds
    // outside 2000::/3 later); the named rows are there to be read against the registry.
    {"::", 3, Reach::kInternal},
    {"4000::", 2, Reach::kInternal},
    {"8000::", 1, Reach::kInternal},
    {"::", 128, Reach::kInternal},   // unspecified
    {"::1", 128, Reach::kInternal},  // loopback
    // IPv4-mapped: a dual-stack socket given one connects to the IPv4 address itself.
    {"::ffff:0:0", 96, Reach::kEmbedded},
    // NAT64's well-known prefix (RFC 6052): the network's translator connects to the IPv4
    // address; DNS64 gives every IPv4-only name one of these on an IPv6-only network.
    {"64:ff9b::", 96, Reach::kEmbedded},
    // (choice) IPv4-compatible (deprecated by RFC 4291) and IPv4-translated (SIIT, dropped by
    // RFC 6145): only a legacy tunnel or a local translator would carry them to their IPv4
    // address, and no name resolves to them.
    {"::", 96, Reach::kInternal},
    {"::ffff:0:0:0", 96, Reach::kInternal},
    // NAT64's local-use prefix (RFC 8215): not globally reachable, and where the IPv4 address
    // sits depends on the prefix length the operator carved from it.
    {"64:ff9b:1::", 48, Reach::kInternal},
    {"100::", 64, Reach::kInternal},   // discard-only
    {"5f00::", 16, Reach::kInternal},  // segment routing SIDs (RFC 9602)
    {"fc00::", 7, Reach::kInternal},   // unique local
    {"fe80::", 10, Reach::kInternal},  // link-local
    {"fec0::", 10, Reach::kInternal},  // site-local, deprecated (RFC 3879) but still met
    {"ff00::", 8, Reach::kInternal},   // multicast
    // IETF protocol assignments, Teredo (2001::/32) with them: (choice) refused whatever client
    // address it carries. A Teredo host is a client behind a NAT, reached only through a relay
    // the sending network picks; receivers are not served that way.
    {"2001::", 23, Reach::kInternal},
    {"2001::", 32, Reach::kInternal},
    // (choice) The PCP, TURN and DNS-SD SRP anycast addresses 2001:1::1-3 stay refused with
    // the rest of 2001::/23, as 192.0.0.9-10 do; the registry's other global blocks in it:
    {"2001:3::", 32, Reach::kPublic},      // AMT
    {"2001:4:112::", 48, Reach::kPublic},  // AS112-v6
    {"2001:20::", 28, Reach::kPublic},     // ORCHIDv2
    {"2001:30::", 28, Reach::kPublic},     // drone remote ID (RFC 9374)
    {"2001:db8::", 32, Reach::kInternal},  // documentation
    // 6to4: (choice) refused whatever IPv4 address it carries. Its relays are deprecated (RFC
    // 7526); what unwraps it is a relay of the sending network's choosing.
    {"2002::", 16, Reach::kInternal},
    {"3fff::", 20, Reach::kInternal},  // documentation (RFC 9637)
};

Reach reachOf(const Poco::Net::IPAddress& address) {
  struct Parsed {
    Poco::Net::IPAddress network, mask;
    unsigned prefix;
    Reach reach;
  };
  static const std::vector<Parsed> blocks = [] {
    std::vector<Parsed> out;
    for (const Block& b : kBlocks) {
      const Poco::Net::IPAddress network(b.network);
      out.push_back({network, Poco::Net::IPAddress(b.prefix, network.family()), b.prefix, b.reach});
    }
    return out;
  }();
  const Parsed* longest = nullptr;
  for (const Parsed& b : blocks) {
    if (b.network.family() == address.family() && (address & b.mask) == b.network &&
        (longest == nullptr || b.prefix > longest->prefix)) {
      longest = &b;
    }
  }
  return longest == nullptr ? Reach::kPublic : longest->reach;
}

}  // namespace

bool isInternalAddress(const Poco::Net::IPAddress& address) {
  // The address without its zone (fe80::1%eth0): Poco compares and masks zones too.
  const Poco::Net::IPAddress a(address.addr(), address.length());
  switch (reachOf(a)) {
    case Reach::kPublic:
      return false;
    case Reach::kInternal:
      return true;
    case Reach::kEmbedded:
      break;
  }
  const auto* bytes = static_cast<const unsigned char*>(a.addr());
  return reachOf(Poco::Net::IPAddress(bytes + 12, 4)) != Reach::kPublic;
}

namespace {

std::vector<Poco::Net::IPAddress> resolve(const std::string& host) {
  Poco::Net::IPAddress literal;
  if (Poco::Net::IPAddress::tryParse(host, literal)) return {literal};
  return Poco::Net::DNS::hostByName(host).addresses();
}

}  // namespace

std::vector<Poco::Net::IPAddress> allowedAddresses(const std::string& host, bool allow_private) {
  std::vector<Poco::Net::IPAddress> out;
  for (const auto& a : resolve(host)) {
    if (allow_private || !isInternalAddress(a)) out.push_back(a);
  }
  return out;
}

Poco::URI checkedPublicUrl(const std::string& raw, const std::string& field, bool allow_private,
                           const std::string& allow_key) {
  if (raw.size() > 2048) throw HttpError::invalid(field, "at most 2048 characters");
  const char* const absolute = "must be an absolute http or https URL";
  Poco::URI uri;
  try {
    uri = Poco::URI(raw);
  } catch (const Poco::Exception&) {
    throw HttpError::invalid(field, absolute);
  }
  if ((uri.getScheme() != "http" && uri.getScheme() != "https") || uri.getHost().empty()) {
    throw HttpError::invalid(field, absolute);
  }
  if (!uri.getUserInfo().empty()) throw HttpError::invalid(field, "must not carry credentials");
  if (!uri.getFragment().empty()) throw HttpError::invalid(field, "must not carry a fragment");
  std::vector<Poco::Net::IPAddress> all;
  try {
    all = resolve(uri.getHost());
  } catch (const Poco::Exception&) {
    throw HttpError::invalid(field, "the host name does not resolve");
  }
  if (all.empty()) throw HttpError::invalid(field, "the host name does not resolve");
  // Every address must pass: a name with a public and a private address would reach the private
  // one whenever the resolver put it first.
  for (const auto& a : all) {
    if (!allow_private && isInternalAddress(a)) {
      throw HttpError::invalid(
          field, "must not point at a loopback, private or link-local address" +
                     (allow_key.empty() ? std::string()
                                        : " (an operator may allow such URLs on a test server "
                                          "with " +
                                              allow_key + "=true)"));
    }
  }
  return uri;
}

}  // namespace svc::sdk
