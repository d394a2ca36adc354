// The NVRTC source of the split convolution epilogue (conv.h): y = act(y + bias[channel]).
#include "kiln/cuda/libs/conv.h"

namespace kiln::cuda::libs {

const char* ConvEpilogueKernelSource() {
  // One grid-stride loop per type. Arithmetic in float (double for f64); f16 and bf16 are
  // converted by hand (PTX cvt for f16, bit shifts and round-to-nearest-even for bf16) so the
  // source needs no toolkit header. The channel of element i is (i / inner) % channels:
  // inner = 1 for channels-last tensors, the product of the spatial sizes for channels-first.
  return R"(
__device__ __forceinline__ float kiln_load(const float* p) { return *p; }
__device__ __forceinline__ double kiln_load(const double* p) { return *p; }
__device__ __forceinline__ void kiln_store(float* p, float v) { *p = v; }
__device__ __forceinline__ void kiln_store(double* p, double v) { *p = v; }

struct kiln_f16 { unsigned short bits; };
struct kiln_bf16 { unsigned short bits; };
__device__ __forceinline__ float kiln_load(const kiln_f16* p) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p->bits));
  return f;
}
__device__ __forceinline__ void kiln_store(kiln_f16* p, float v) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  p->bits = h;
}
__device__ __forceinline__ float kiln_load(const kiln_bf16* p) {
  return __uint_as_float(static_cast<unsigned int>(p->bits) << 16);
}
__device__ __forceinline__ void kiln_store(kiln_bf16* p, float v) {
  unsigned int u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    p->bits = static_cast<unsigned short>((u >> 16) | 0x40u);  // quiet NaN, sign kept
    return;
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  p->bits = static_cast<unsigned short>(u >> 16);
}

template <typename T, typename A>
__device__ void kiln_conv_epilogue(T* y, const T* bias, unsigned long long n,
                                   unsigned long long inner, unsigned long long channels,
                                   int relu) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x +
                              threadIdx.x;
       i < n; i += stride) {
    A v = kiln_load(y + i);
    if (bias != nullptr) v += static_cast<A>(kiln_load(bias + (i / inner) % channels));
    // max(v, 0) that keeps NaN, as HLO maximum does.
    if (relu && v < static_cast<A>(0)) v = static_cast<A>(0);
    kiln_store(y + i, v);
  }
}

#define KILN_CONV_EPILOGUE(name, T, A)                                                     \
  extern "C" __global__ void name(T* y, const T* bias, unsigned long long n,               \
                                  unsigned long long inner, unsigned long long channels,   \
                                  int relu) {                                              \
    kiln_conv_epilogue<T, A>(y, bias, n, inner, channels, relu);                           \
  }
KILN_CONV_EPILOGUE(kiln_conv_epilogue_f32, float, float)
KILN_CONV_EPILOGUE(kiln_conv_epilogue_f64, double, double)
KILN_CONV_EPILOGUE(kiln_conv_epilogue_f16, kiln_f16, float)
KILN_CONV_EPILOGUE(kiln_conv_epilogue_bf16, kiln_bf16, float)
)";
}

}  // namespace kiln::cuda::libs
