// Stable fingerprints: SHA-256 over bytes. Used for module/instruction fingerprints (the
// autotuning cache keys on them) and on-disk cache file names. Stable across runs, machines
// and builds, unlike std::hash.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  std::array<uint8_t, 32> Finish();

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lowercase hex of SHA-256(data).
std::string Sha256Hex(std::string_view data);

// First 16 hex digits of SHA-256: a short, readable fingerprint.
std::string Fingerprint64Hex(std::string_view data);

// First 8 bytes of SHA-256 as an integer.
uint64_t Fingerprint64(std::string_view data);

}  // namespace kiln
