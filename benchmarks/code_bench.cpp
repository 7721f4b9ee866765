// µs per verification-code scan of what mail mostly is (filing runs it on every message): a
// 2 KB text naming no code (the SMTP load's body; the scan stops after the keyword pass), and a
// short message with a code.
#include <svc/sdk/verification_code.h>

#include <benchmark/benchmark.h>

#include <string>

namespace {

std::string prose(std::size_t size) {
  std::string body;
  while (body.size() < size) {
    body += "The quick brown fox jumps over the lazy dog, again and again and again.\r\n";
  }
  return body;
}

void ProseWithoutCode(benchmark::State& state) {
  const std::string body = prose(2000);
  for (auto _ : state) {
    benchmark::DoNotOptimize(svc::sdk::extractVerificationCode("load test", body));
  }
}
BENCHMARK(ProseWithoutCode)->Unit(benchmark::kMicrosecond);

void ShortMessageWithCode(benchmark::State& state) {
  const std::string body =
      "Hi,\r\n\r\nYour verification code is 482913. It expires in 10 minutes.\r\n\r\n"
      "If you did not ask for it, ignore this message.\r\n";
  for (auto _ : state) {
    benchmark::DoNotOptimize(svc::sdk::extractVerificationCode("Your code", body));
  }
}
BENCHMARK(ShortMessageWithCode)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
