// µs per DKIM check of a typical signed message (2 KB body, rsa-sha256 with a 2048-bit key,
// relaxed/relaxed, signed by our DkimSigner): our verifier with its key cache warm (a signer seen
// before), cold (a new cache each time: the key decoded, as for a first message), and libopendkim,
// which decodes the key for every message.
#include "auth/dkim_verify.h"
#include "dkim.h"
#include "opendkim_reference.h"

#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <svc/sdk/util.h>

#include <unistd.h>
#include <cstdio>
#include <ctime>

using namespace svc::plugins::email;

namespace {

struct Fixture {
  std::string message, record;
  Fixture() {
    EVP_PKEY* key = EVP_RSA_gen(2048);
    char path[] = "/tmp/svc-dkim-bench-XXXXXX";
    const int fd = mkstemp(path);
    FILE* f = fdopen(fd, "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    DkimSigner signer("s1", path);
    unlink(path);
    std::string m =
        "From: Load <load@bench.example>\r\nTo: <sink@bench.test>\r\nSubject: load test\r\n"
        "Message-ID: <1@bench.example>\r\n\r\n";
    while (m.size() < 2000) {
      m += "The quick brown fox jumps over the lazy dog, again and again and again.\r\n";
    }
    message = signer.sign(m, "bench.example", std::time(nullptr));
    unsigned char* der = nullptr;
    const int len = i2d_PUBKEY(key, &der);
    record = "v=DKIM1; k=rsa; p=" +
             svc::sdk::base64(std::string_view(reinterpret_cast<const char*>(der), len));
    OPENSSL_free(der);
    EVP_PKEY_free(key);
  }
  DkimKeyLookup lookup() const {
    return [this](const std::string&) { return DkimKeyAnswer{DkimKeyAnswer::Status::kOk, record}; };
  }
};

const Fixture& fixture() {
  static Fixture f;
  return f;
}

void check(const std::vector<DkimVerdict>& v, benchmark::State& state) {
  if (v.size() != 1 || v[0].result != "pass") state.SkipWithError("the message did not pass");
}

void BM_OursWarm(benchmark::State& state) {
  const Fixture& f = fixture();
  DkimKeyCache cache;
  DkimVerifyOptions options;
  options.now = std::time(nullptr);
  const auto lookup = f.lookup();
  for (auto _ : state) check(verifyDkim(f.message, lookup, cache, options), state);
}
BENCHMARK(BM_OursWarm)->Unit(benchmark::kMicrosecond);

void BM_OursCold(benchmark::State& state) {
  const Fixture& f = fixture();
  DkimVerifyOptions options;
  options.now = std::time(nullptr);
  const auto lookup = f.lookup();
  for (auto _ : state) {
    DkimKeyCache cache;
    check(verifyDkim(f.message, lookup, cache, options), state);
  }
}
BENCHMARK(BM_OursCold)->Unit(benchmark::kMicrosecond);

void BM_Libopendkim(benchmark::State& state) {
  const Fixture& f = fixture();
  const auto lookup = f.lookup();
  for (auto _ : state) check(svc::testing::opendkimVerify(lookup, f.message), state);
}
BENCHMARK(BM_Libopendkim)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
