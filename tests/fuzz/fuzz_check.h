// What every fuzz target shares: a check that aborts (libFuzzer then saves the input as a crash
// file) and a small deterministic generator driven by input bytes, so a saved input replays the
// same way every time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// A broken invariant is as much a finding as a sanitizer report: abort so libFuzzer keeps it.
#define FUZZ_CHECK(cond, what)                                                             \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s (%s) at %s:%d\n", #cond, what, __FILE__, \
                   __LINE__);                                                              \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace svc::fuzz {

inline std::string_view asView(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// xorshift32, seeded from input bytes: split sizes and choices that replay exactly.
class Rng {
 public:
  explicit Rng(std::uint32_t seed) : state_(seed * 2654435761u + 0x9e3779b9u) {
    if (state_ == 0) state_ = 1;  // xorshift stays at zero forever
  }
  std::uint32_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 17;
    state_ ^= state_ << 5;
    return state_;
  }
  /// @return a number in [lo, hi].
  std::size_t range(std::size_t lo, std::size_t hi) { return lo + next() % (hi - lo + 1); }

 private:
  std::uint32_t state_;
};

}  // namespace svc::fuzz
