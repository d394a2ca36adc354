// Streaming (non-temporal) stores for kernels that write large outputs (internal to
// src/kiln/cpu/kernels): Note [Streaming stores] in loop_kernel.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace kiln::cpu::internal {

// Outputs of at least this many bytes in total are written with streaming stores.
inline constexpr int64_t kStreamOutputBytes = int64_t{4} << 20;

// Copies `bytes` bytes from src to dst; the aligned middle of dst is written with streaming
// stores (the destination lines are not read into the cache first). The stores are weakly
// ordered: call StreamFence before another thread may read dst.
inline void StreamCopy(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
#if defined(__AVX512F__)
  constexpr size_t kV = 64;
#elif defined(__SSE2__)
  constexpr size_t kV = 16;
#else
  constexpr size_t kV = 0;
#endif
  if constexpr (kV > 0) {
    size_t head = (kV - reinterpret_cast<uintptr_t>(d) % kV) % kV;
    if (head > bytes) head = bytes;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    for (; bytes >= kV; bytes -= kV, d += kV, s += kV) {
#if defined(__AVX512F__)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d), _mm512_loadu_si512(s));
#elif defined(__SSE2__)
      _mm_stream_si128(reinterpret_cast<__m128i*>(d),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
#endif
    }
  }
  std::memcpy(d, s, bytes);
}

// Orders the streaming stores before the stores that follow (a task's completion flag).
inline void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace kiln::cpu::internal
