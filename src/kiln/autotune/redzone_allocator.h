// RedzoneAllocator: device buffers with guard bands, to catch candidates that write outside
// their buffers.
//
// Every allocation is laid out as
//   [ front redzone | user bytes | rear redzone (+ rounding slack) ]
// and both redzones are filled with one byte pattern (default 0xFF, which reads as NaN in
// every float type and -1 in signed integers). The rear redzone starts right after the last
// user byte, so a write one byte past the end is caught. CheckAndRefill reads every live
// buffer's redzones back to the host, reports the first damaged one and restores the pattern,
// so that one bad candidate does not make the next one look guilty.
//
// The front redzone size is rounded up to the allocator's alignment so user pointers keep it.
// Buffers are freed when the RedzoneAllocator is destroyed (or by Free). Not thread-safe: one
// profiler uses it from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/allocator.h"
#include "kiln/runtime/stream.h"

namespace kiln::autotune {

struct RedzoneOptions {
  // Guard bytes on each side of every buffer. Several MiB catches the far-off writes of a
  // wrongly strided kernel too, not only off-by-one ones.
  uint64_t redzone_bytes = 4ull << 20;
  // The guard pattern (see above).
  uint8_t pattern = 0xFF;
};

// One damaged redzone.
struct RedzoneDamage {
  std::string buffer;       // the tag it was allocated with ("input 0", "scratch")
  bool rear = false;        // past the end (true) or before the start
  uint64_t offset = 0;      // of the first damaged byte, from the user region's start (negative
                            // offsets are reported as front + distance before the start)
  uint64_t bytes_damaged = 0;
  std::string ToString() const;
};

class RedzoneAllocator {
 public:
  // `allocator` and `stream` must outlive this object; all transfers go through `stream`.
  RedzoneAllocator(runtime::Allocator& allocator, runtime::Stream* stream,
                   const RedzoneOptions& options);
  ~RedzoneAllocator();
  RedzoneAllocator(const RedzoneAllocator&) = delete;
  RedzoneAllocator& operator=(const RedzoneAllocator&) = delete;

  // The stream used for fills and checks (the profiler replaces a failed stream).
  void set_stream(runtime::Stream* stream) { stream_ = stream; }

  // A guarded buffer of `bytes` user bytes (redzones filled, user bytes filled with the pattern
  // too). `bytes` == 0 gives the null buffer.
  StatusOr<runtime::DeviceMemory> Allocate(uint64_t bytes, std::string tag);
  // Frees one buffer returned by Allocate.
  Status Free(runtime::DeviceMemory user);

  // Reads back every live buffer's redzones (synchronizing the stream); returns the damage
  // found (empty: all intact) after restoring the pattern. An error only when the device
  // transfers themselves fail.
  StatusOr<std::vector<RedzoneDamage>> CheckAndRefill();

  uint64_t redzone_bytes() const { return front_; }

 private:
  struct Buffer {
    runtime::DeviceMemory whole;
    uint64_t user_bytes;
    std::string tag;
  };
  runtime::Allocator& allocator_;
  runtime::Stream* stream_;
  RedzoneOptions options_;
  uint64_t front_;  // front redzone bytes (options.redzone_bytes rounded up to the alignment)
  std::vector<Buffer> buffers_;
  std::vector<std::vector<uint8_t>> staging_;  // host copies of the zones, reused
};

}  // namespace kiln::autotune
