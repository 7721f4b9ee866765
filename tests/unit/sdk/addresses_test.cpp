// The public-address rule (sdk::isInternalAddress): every block of the IANA IPv4 and IPv6
// Special-Purpose Address Registries that is not globally reachable is refused, each checked on
// both sides of its boundaries, and the IPv6 forms that carry an IPv4 address are judged by it
// (IPv4-mapped, NAT64) or refused whatever it is (6to4, Teredo, IPv4-compatible and -translated,
// NAT64's local-use prefix).
#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>

#include <Poco/Net/IPAddress.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>

namespace svc::sdk {
namespace {

using Poco::Net::IPAddress;

struct Case {
  const char* address;
  bool internal;
};

// Around each IPv4 block: the address before it, its first and last, the one after it.
constexpr Case kIPv4[] = {
    {"0.0.0.0", true},  // "this network"
    {"0.255.255.255", true},
    {"1.0.0.0", false},
    {"9.255.255.255", false},  // private use
    {"10.0.0.0", true},
    {"10.255.255.255", true},
    {"11.0.0.0", false},
    {"100.63.255.255", false},  // shared address space
    {"100.64.0.0", true},
    {"100.127.255.255", true},
    {"100.128.0.0", false},
    {"126.255.255.255", false},  // loopback
    {"127.0.0.0", true},
    {"127.0.0.1", true},
    {"127.255.255.255", true},
    {"128.0.0.0", false},
    {"169.253.255.255", false},  // link-local
    {"169.254.0.0", true},
    {"169.254.169.254", true},
    {"169.254.255.255", true},
    {"169.255.0.0", false},
    {"172.15.255.255", false},  // private use
    {"172.16.0.0", true},
    {"172.31.255.255", true},
    {"172.32.0.0", false},
    {"191.255.255.255", false},  // IETF protocol assignments, all of it
    {"192.0.0.0", true},
    {"192.0.0.8", true},
    {"192.0.0.9", true},   // PCP anycast: globally reachable in the registry, refused by choice
    {"192.0.0.10", true},  // TURN anycast: the same
    {"192.0.0.170", true},
    {"192.0.0.255", true},
    {"192.0.1.0", false},
    {"192.0.1.255", false},  // documentation (TEST-NET-1)
    {"192.0.2.0", true},
    {"192.0.2.255", true},
    {"192.0.3.0", false},
    {"192.88.98.255", false},  // deprecated 6to4 relay anycast
    {"192.88.99.0", true},
    {"192.88.99.1", true},
    {"192.88.99.255", true},
    {"192.88.100.0", false},
    {"192.167.255.255", false},  // private use
    {"192.168.0.0", true},
    {"192.168.255.255", true},
    {"192.169.0.0", false},
    {"198.17.255.255", false},  // benchmarking
    {"198.18.0.0", true},
    {"198.19.255.255", true},
    {"198.20.0.0", false},
    {"198.51.99.255", false},  // documentation (TEST-NET-2)
    {"198.51.100.0", true},
    {"198.51.100.255", true},
    {"198.51.101.0", false},
    {"203.0.112.255", false},  // documentation (TEST-NET-3)
    {"203.0.113.0", true},
    {"203.0.113.255", true},
    {"203.0.114.0", false},
    {"223.255.255.255", false},  // multicast
    {"224.0.0.0", true},
    {"239.255.255.255", true},
    {"240.0.0.0", true},  // reserved
    {"255.255.255.254", true},
    {"255.255.255.255", true},  // limited broadcast
    // The registry's globally reachable blocks, and ordinary addresses.
    {"192.31.196.1", false},  // AS112-v4
    {"192.52.193.1", false},  // AMT
    {"192.175.48.1", false},  // AS112 direct delegation
    {"8.8.8.8", false},
    {"93.184.216.34", false},
};

// Around each IPv6 block, the same way. Outside 2000::/3 everything is refused, so the neighbours
// of the blocks there are refused too.
constexpr Case kIPv6[] = {
    {"::", true},   // unspecified
    {"::1", true},  // loopback
    {"::2", true},
    {"::808:808", true},  // IPv4-compatible, carrying 8.8.8.8: refused by choice
    {"::7f00:1", true},
    {"::ffff:ffff", true},
    {"::fffe:ffff:ffff", true},  // before IPv4-mapped
    {"::ffff:808:808", false},   // IPv4-mapped 8.8.8.8
    {"::ffff:7f00:1", true},     // IPv4-mapped 127.0.0.1
    {"::1:0:0:0", true},         // after it
    {"::ffff:0:808:808", true},  // IPv4-translated, carrying 8.8.8.8: refused by choice
    {"::ffff:0:7f00:1", true},
    {"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", true},  // before NAT64's well-known prefix
    {"64:ff9b::808:808", false},                      // NAT64 for 8.8.8.8
    {"64:ff9b::7f00:1", true},                        // NAT64 for 127.0.0.1
    {"64:ff9b::a9fe:a9fe", true},                     // NAT64 for 169.254.169.254
    {"64:ff9b::1:0:0", true},                         // after it
    {"64:ff9b:1::808:808", true},  // NAT64's local-use prefix, whatever it carries
    {"64:ff9b:1::a9fe:a9fe", true},
    {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", true},
    {"100::", true},  // discard-only
    {"100::ffff:ffff:ffff:ffff", true},
    {"100:0:0:1::1", true},                             // dummy prefix
    {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},  // before global unicast (2000::/3)
    {"2000::", false},
    {"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},  // before IETF protocol assignments
    {"2001::", true},                                    // Teredo
    {"2001:0:4136:e378:8000:63bf:3fff:fdd2", true},      // Teredo, RFC 4380's example
    {"2001:1::1", true},  // PCP anycast: globally reachable in the registry, refused by choice
    {"2001:1::2", true},  // TURN anycast: the same
    {"2001:1::3", true},  // DNS-SD SRP anycast: the same
    {"2001:2::", true},   // benchmarking
    {"2001:2:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2001:3::", false},  // AMT
    {"2001:3:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"2001:4::", true},
    {"2001:4:111:ffff:ffff:ffff:ffff:ffff", true},
    {"2001:4:112::", false},  // AS112-v6
    {"2001:4:112:ffff:ffff:ffff:ffff:ffff", false},
    {"2001:4:113::", true},
    {"2001:10::1", true},  // deprecated ORCHID
    {"2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2001:20::", false},  // ORCHIDv2
    {"2001:30::", false},  // drone remote ID
    {"2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"2001:40::", true},
    {"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2001:200::", false},                              // after IETF protocol assignments
    {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", false},  // documentation
    {"2001:db8::", true},
    {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2001:db9::", false},
    {"2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},  // 6to4, whatever it carries
    {"2002::", true},
    {"2002:808:808::", true},
    {"2002:a9fe:a9fe::", true},
    {"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2003::", false},
    {"2620:4f:8000::1", false},                          // AS112 direct delegation
    {"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},  // documentation (3fff::/20)
    {"3fff::", true},
    {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"3fff:1000::", false},
    {"3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},  // the end of global unicast
    {"4000::", true},
    {"5f00::", true},  // segment routing SIDs
    {"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"fc00::", true},  // unique local
    {"fd12:3456::1", true},
    {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"fe80::", true},  // link-local
    {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"fec0::1", true},  // deprecated site-local
    {"ff00::", true},   // multicast
    {"ff02::1", true},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2606:4700:4700::1111", false},
    {"2001:4860:4860::8888", false},
};

TEST(PublicAddressRule, RefusesEveryIPv4BlockThatIsNotGloballyReachable) {
  for (const Case& c : kIPv4)
    EXPECT_EQ(isInternalAddress(IPAddress(c.address)), c.internal) << c.address;
}

TEST(PublicAddressRule, RefusesEveryIPv6BlockThatIsNotGloballyReachable) {
  for (const Case& c : kIPv6)
    EXPECT_EQ(isInternalAddress(IPAddress(c.address)), c.internal) << c.address;
}

// An IPv6 address of `prefix` (its first bytes) with `v4` in its last 32 bits, inverted or not.
IPAddress carrying(std::array<unsigned char, 12> prefix, const IPAddress& v4, bool invert = false) {
  unsigned char bytes[16] = {};
  std::copy(prefix.begin(), prefix.end(), bytes);
  const auto* four = static_cast<const unsigned char*>(v4.addr());
  for (int i = 0; i < 4; ++i)
    bytes[12 + i] = static_cast<unsigned char>(invert ? ~four[i] : four[i]);
  return IPAddress(bytes, 16);
}

TEST(PublicAddressRule, JudgesMappedAndNat64AddressesAsTheIPv4AddressTheyCarry) {
  for (const Case& c : kIPv4) {
    const IPAddress v4(c.address);
    const IPAddress mapped = carrying({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, v4);
    const IPAddress nat64 = carrying({0, 0x64, 0xff, 0x9b}, v4);
    EXPECT_EQ(isInternalAddress(mapped), c.internal) << mapped.toString();
    EXPECT_EQ(isInternalAddress(nat64), c.internal) << nat64.toString();
  }
}

TEST(PublicAddressRule, RefusesTheOtherFormsThatCarryAnIPv4AddressWhateverItIs) {
  for (const Case& c : kIPv4) {
    const IPAddress v4(c.address);
    const auto* four = static_cast<const unsigned char*>(v4.addr());
    unsigned char six_to_four[16] = {0x20, 0x02, four[0], four[1], four[2], four[3]};
    for (const IPAddress& a : {
             carrying({}, v4),                                    // IPv4-compatible
             carrying({0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, v4),  // IPv4-translated
             carrying({0, 0x64, 0xff, 0x9b, 0, 1}, v4),           // NAT64 local-use
             IPAddress(six_to_four, 16),                          // 6to4
             carrying({0x20, 0x01, 0, 0, 0x41, 0x36, 0xe3, 0x78, 0x80, 0, 0x63, 0xbf}, v4,
                      true),  // Teredo: the client's address inverted
         }) {
      EXPECT_TRUE(isInternalAddress(a)) << a.toString() << " carrying " << c.address;
    }
  }
}

TEST(PublicAddressRule, JudgesAScopedAddressWithoutItsZone) {
  EXPECT_TRUE(isInternalAddress(IPAddress("fe80::1%lo")));
  EXPECT_FALSE(isInternalAddress(IPAddress("2606:4700:4700::1111%lo")));
}

TEST(PublicAddressRule, UrlsNamingSuchAddressesAreRefused) {
  for (const char* url :
       {"http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b::7f00:1]/",
        "http://[64:ff9b:1::a9fe:a9fe]/", "http://[2002:a9fe:a9fe::]/", "http://[::ffff:0:7f00:1]/",
        "http://198.18.0.1/", "http://192.0.0.1/", "http://192.88.99.1/", "http://240.0.0.1/",
        "http://[100::1]/", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/"}) {
    try {
      checkedPublicUrl(url, "url", false);
      ADD_FAILURE() << url << " accepted";
    } catch (const HttpError& e) {
      EXPECT_EQ(e.status(), 400) << url;
      EXPECT_NE(e.errors().at("url").front().find("private"), std::string::npos) << url;
    }
    EXPECT_NO_THROW(checkedPublicUrl(url, "url", true)) << url;
  }
  EXPECT_NO_THROW(checkedPublicUrl("http://[64:ff9b::808:808]/", "url", false));
  EXPECT_NO_THROW(checkedPublicUrl("http://[::ffff:808:808]/", "url", false));
}

}  // namespace
}  // namespace svc::sdk
