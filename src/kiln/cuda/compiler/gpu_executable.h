// GpuExecutable: a compiled module (gpu_compiler.h) loaded onto one CUDA device, ready to run.
//
// Buffers: one BFC allocator per executable (runtime/bfc_allocator.h) provides, once, at
// Create: the constants (uploaded), one buffer per entry parameter leaf (arguments are copied
// in), the arena of all temporaries and outputs (BufferAssignment's kTemp allocation), and the
// workspace the library calls and kernels share. Because these addresses never change, the
// thunk sequence can be replayed as a CUDA graph.
//
// Note [CUDA graph capture]
//   An executable whose thunks never make the host wait (no while/conditional, no host
//   fallback) is captured once as a CUDA graph and replayed: the first Execute runs the thunks
//   eagerly (it creates library handles and anything else that is created lazily, which must
//   not happen during capture); the second captures them on the run's stream in relaxed mode
//   (cuStreamBeginCapture/EndCapture) and instantiates the graph; from then on Execute is one
//   cuGraphLaunch. Kernel arguments, library calls and copies all see the same buffers on
//   every run, so the graph stays valid for the executable's lifetime. A capture that fails
//   (a library call that cannot be captured) turns graphs off for the executable, with a
//   warning, and the run proceeds eagerly. Profiled runs are never captured (they record
//   events between thunks).
//
// Runs: Run() copies the arguments in, executes, and copies the result out. Benchmarks call
// SetArguments once, then Execute repeatedly (device work + synchronize; results stay on the
// device), then FetchResult. Runs of one executable are serialized by a mutex.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/hlo/literal.h"
#include "kiln/runtime/bfc_allocator.h"

namespace kiln::cuda {

struct GpuExecutableOptions {
  // Replay runs without host synchronization as a CUDA graph (Note [CUDA graph capture]).
  bool use_cuda_graph = true;
  // Run independent (library call, kernel) pairs of the entry sequence on two streams
  // (Note [Side stream] in gpu_thunk.h); graphs capture the fork and join.
  bool use_side_stream = true;
};

struct GpuRunOptions {
  // Record events around every thunk (no graph) for ProfileReport / WriteChromeTrace.
  bool profile = false;
  // Fill the arena and the workspace with 0xff bytes (NaN for every float type) before the
  // run, so that an output element no kernel writes shows up as NaN, not as a stale value
  // that happens to be right. For tests and `kiln run`; benchmarks leave it off.
  bool poison = false;
};

class GpuExecutable {
 public:
  static StatusOr<std::unique_ptr<GpuExecutable>> Create(std::unique_ptr<CompiledGpuModule> compiled,
                                                         CudaDevice& device, GpuExecutableOptions options = {});
  ~GpuExecutable();

  // One literal per entry parameter (dimensions and element type as the parameter's); returns
  // the root's value (a tuple literal for a tuple root).
  StatusOr<Literal> Run(std::span<const Literal> arguments, const GpuRunOptions& options = {});

  Status SetArguments(std::span<const Literal> arguments);
  // Runs the module on the arguments set last and waits for the device.
  Status Execute(const GpuRunOptions& options = {});
  StatusOr<Literal> FetchResult();

  // Device time of the last Execute (events around it), milliseconds.
  double last_device_ms() const { return last_device_ms_; }
  bool graph_captured() const { return graph_exec_ != nullptr; }
  // Pairs of the entry sequence that run concurrently on the side stream.
  int64_t side_stream_pairs() const { return side_pairs_; }
  bool graph_eligible() const { return graph_eligible_; }

  const CompiledGpuModule& compiled() const { return *compiled_; }
  CudaDevice& device() const { return device_; }

  // Per-thunk table of the profiled runs so far: time per execution, bytes, FLOPs, GB/s,
  // TFLOP/s and % of the device's floor (max of bytes / peak bandwidth and FLOPs / peak rate).
  std::string ProfileReport(int max_rows = 40) const;
  // The last profiled run as Chrome trace events (chrome://tracing, Perfetto).
  Status WriteChromeTrace(const std::string& path) const;

 private:
  GpuExecutable(std::unique_ptr<CompiledGpuModule> compiled, CudaDevice& device, GpuExecutableOptions options);
  Status Initialize();
  Status ExecuteLocked(const GpuRunOptions& options);
  Status Capture();

  std::unique_ptr<CompiledGpuModule> compiled_;
  CudaDevice& device_;
  GpuExecutableOptions options_;
  std::unique_ptr<runtime::BfcAllocator> allocator_;
  std::unique_ptr<runtime::Stream> stream_;
  std::unique_ptr<runtime::Event> start_, stop_;
  std::unique_ptr<runtime::Stream> side_stream_;       // null: no planned pair
  std::unique_ptr<runtime::Event> fork_, join_;
  int64_t side_pairs_ = 0;
  void SetSideStream(ThunkExecuteParams& p) const;
  std::vector<runtime::OwnedDeviceMemory> owned_;  // constants, parameters, arena, workspace
  BufferAllocations buffers_;
  runtime::DeviceMemory workspace_;
  std::vector<std::pair<int64_t, ShapeIndex>> parameter_leaves_;  // per allocation (-1: none)
  Shape result_shape_;

  std::mutex mu_;
  bool graph_eligible_ = false;
  int eager_runs_ = 0;
  CUgraph graph_ = nullptr;
  CUgraphExec graph_exec_ = nullptr;
  double last_device_ms_ = 0;
  std::unique_ptr<ThunkProfiler> profiler_;
};

}  // namespace kiln::cuda
