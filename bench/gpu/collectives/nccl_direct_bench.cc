// nccl_direct_bench: NCCL's own all-reduce / all-gather / reduce-scatter / all-to-all, timed as
// kiln_collectives_bench times kiln's: wall time of one synchronous call (the NCCL calls of
// every GPU in one group, then a synchronize of every stream), median of the iterations.
// One process drives N GPUs (ncclCommInitAll); libcuda and libnccl are loaded at run time
// (KILN_NCCL_LIBRARY names the latter), as kiln loads them; no CUDA runtime, no NCCL headers.
//
//   nccl_direct_bench [--gpus N] [--min BYTES] [--max BYTES] [--iterations I] [--warmup W] [--ops ...]
//
// Output as kiln_collectives_bench's, system "nccl". all-to-all is one group of ncclSend /
// ncclRecv pairs, as nccl-tests' alltoall and kiln's thunk do it.
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using ncclComm_t = void*;
using ncclResult_t = int;
enum { ncclInt8 = 0, ncclFloat32 = 7, ncclSum = 0 };

struct Nccl {
  ncclResult_t (*CommInitAll)(ncclComm_t*, int, const int*);
  ncclResult_t (*AllReduce)(const void*, void*, size_t, int, int, ncclComm_t, CUstream);
  ncclResult_t (*AllGather)(const void*, void*, size_t, int, ncclComm_t, CUstream);
  ncclResult_t (*ReduceScatter)(const void*, void*, size_t, int, int, ncclComm_t, CUstream);
  ncclResult_t (*Send)(const void*, size_t, int, int, ncclComm_t, CUstream);
  ncclResult_t (*Recv)(void*, size_t, int, int, ncclComm_t, CUstream);
  ncclResult_t (*GroupStart)();
  ncclResult_t (*GroupEnd)();
  ncclResult_t (*GetVersion)(int*);
  const char* (*GetErrorString)(ncclResult_t);
};

struct Cu {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*StreamCreate)(CUstream*, unsigned);
  CUresult (*StreamSynchronize)(CUstream);
};

template <typename T>
bool Load(void* h, const char* name, T* slot) {
  *slot = reinterpret_cast<T>(dlsym(h, name));
  if (*slot == nullptr) std::fprintf(stderr, "missing symbol %s\n", name);
  return *slot != nullptr;
}

#define CHECK_CU(x)                                                    \
  do {                                                                 \
    CUresult r_ = (x);                                                 \
    if (r_ != CUDA_SUCCESS) {                                          \
      std::fprintf(stderr, "%s failed: %d\n", #x, static_cast<int>(r_)); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)
#define CHECK_NCCL(x)                                                             \
  do {                                                                            \
    ncclResult_t r_ = (x);                                                        \
    if (r_ != 0) {                                                                \
      std::fprintf(stderr, "%s failed: %s\n", #x, nccl.GetErrorString(r_));       \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  int gpus = 1, iterations = 20, warmup = 5;
  long long min_bytes = 8, max_bytes = 1LL << 30;
  std::string ops = "all_reduce,all_gather,reduce_scatter,all_to_all";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--gpus") gpus = std::atoi(v.c_str());
    else if (k == "--min") min_bytes = std::atoll(v.c_str());
    else if (k == "--max") max_bytes = std::atoll(v.c_str());
    else if (k == "--iterations") iterations = std::atoi(v.c_str());
    else if (k == "--warmup") warmup = std::atoi(v.c_str());
    else if (k == "--ops") ops = v;
  }
  void* hc = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  const char* lib = std::getenv("KILN_NCCL_LIBRARY");
  void* hn = dlopen(lib != nullptr && *lib ? lib : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (hc == nullptr || hn == nullptr) {
    std::fprintf(stderr, "cannot load libcuda.so.1 or libnccl.so.2: %s\n", dlerror());
    return 1;
  }
  Cu cu{};
  Nccl nccl{};
  bool ok = Load(hc, "cuInit", &cu.Init) && Load(hc, "cuDeviceGet", &cu.DeviceGet) &&
            Load(hc, "cuDevicePrimaryCtxRetain", &cu.PrimaryCtxRetain) && Load(hc, "cuCtxSetCurrent", &cu.CtxSetCurrent) &&
            Load(hc, "cuMemAlloc_v2", &cu.MemAlloc) && Load(hc, "cuMemsetD8_v2", &cu.MemsetD8) &&
            Load(hc, "cuStreamCreate", &cu.StreamCreate) && Load(hc, "cuStreamSynchronize", &cu.StreamSynchronize) &&
            Load(hn, "ncclCommInitAll", &nccl.CommInitAll) && Load(hn, "ncclAllReduce", &nccl.AllReduce) &&
            Load(hn, "ncclAllGather", &nccl.AllGather) && Load(hn, "ncclReduceScatter", &nccl.ReduceScatter) &&
            Load(hn, "ncclSend", &nccl.Send) && Load(hn, "ncclRecv", &nccl.Recv) &&
            Load(hn, "ncclGroupStart", &nccl.GroupStart) && Load(hn, "ncclGroupEnd", &nccl.GroupEnd) &&
            Load(hn, "ncclGetVersion", &nccl.GetVersion) && Load(hn, "ncclGetErrorString", &nccl.GetErrorString);
  if (!ok) return 1;
  CHECK_CU(cu.Init(0));
  std::vector<CUcontext> ctx(gpus);
  std::vector<CUstream> streams(gpus);
  std::vector<CUdeviceptr> send(gpus), recv(gpus);
  std::vector<int> devs(gpus);
  for (int g = 0; g < gpus; ++g) {
    CUdevice d;
    CHECK_CU(cu.DeviceGet(&d, g));
    CHECK_CU(cu.PrimaryCtxRetain(&ctx[g], d));
    CHECK_CU(cu.CtxSetCurrent(ctx[g]));
    CHECK_CU(cu.StreamCreate(&streams[g], CU_STREAM_NON_BLOCKING));
    CHECK_CU(cu.MemAlloc(&send[g], static_cast<size_t>(max_bytes)));
    CHECK_CU(cu.MemAlloc(&recv[g], static_cast<size_t>(max_bytes)));
    CHECK_CU(cu.MemsetD8(send[g], 0, static_cast<size_t>(max_bytes)));
    devs[g] = g;
  }
  std::vector<ncclComm_t> comms(gpus);
  CHECK_CU(cu.CtxSetCurrent(ctx[0]));
  CHECK_NCCL(nccl.CommInitAll(comms.data(), gpus, devs.data()));
  int version = 0;
  nccl.GetVersion(&version);
  std::fprintf(stderr, "NCCL %d, %d GPU(s)\n", version, gpus);
  std::printf("system\top\tparticipants\tbytes\ttime_us\talgbw_GBps\tbusbw_GBps\n");
  size_t pos = 0;
  while (pos <= ops.size()) {
    size_t end = ops.find(',', pos);
    if (end == std::string::npos) end = ops.size();
    const std::string op = ops.substr(pos, end - pos);
    pos = end + 1;
    for (long long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      const long long elements = std::max<long long>(bytes / 4, gpus);
      if (elements % gpus != 0) continue;
      const size_t count = static_cast<size_t>(elements), part = count / gpus;
      auto once = [&] {
        CHECK_NCCL(nccl.GroupStart());
        for (int g = 0; g < gpus; ++g) {
          void* s = reinterpret_cast<void*>(send[g]);
          void* r = reinterpret_cast<void*>(recv[g]);
          if (op == "all_reduce") {
            CHECK_NCCL(nccl.AllReduce(s, r, count, ncclFloat32, ncclSum, comms[g], streams[g]));
          } else if (op == "all_gather") {
            CHECK_NCCL(nccl.AllGather(s, r, part * 4, ncclInt8, comms[g], streams[g]));
          } else if (op == "reduce_scatter") {
            CHECK_NCCL(nccl.ReduceScatter(s, r, part, ncclFloat32, ncclSum, comms[g], streams[g]));
          } else {
            for (int j = 0; j < gpus; ++j) {
              CHECK_NCCL(nccl.Send(static_cast<char*>(s) + j * part * 4, part * 4, ncclInt8, j, comms[g], streams[g]));
              CHECK_NCCL(nccl.Recv(static_cast<char*>(r) + j * part * 4, part * 4, ncclInt8, j, comms[g], streams[g]));
            }
          }
        }
        CHECK_NCCL(nccl.GroupEnd());
        for (int g = 0; g < gpus; ++g) {
          CHECK_CU(cu.CtxSetCurrent(ctx[g]));
          CHECK_CU(cu.StreamSynchronize(streams[g]));
        }
      };
      std::vector<double> us;
      for (int it = 0; it < warmup + iterations; ++it) {
        const auto t0 = std::chrono::steady_clock::now();
        once();
        const auto t1 = std::chrono::steady_clock::now();
        if (it >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      std::sort(us.begin(), us.end());
      const double t = us[us.size() / 2];
      const double size = static_cast<double>(elements) * 4;
      const double algbw = size / (t * 1e-6) / 1e9;
      const double factor = op == "all_reduce" ? 2.0 * (gpus - 1) / gpus : static_cast<double>(gpus - 1) / gpus;
      std::printf("nccl\t%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\n", op.c_str(), gpus, size, t, algbw, algbw * factor);
      std::fflush(stdout);
    }
  }
  return 0;
}
