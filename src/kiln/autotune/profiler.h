// Profiler: runs compiled candidates of one instruction on a device, checks them, times them.
//
// Written against the runtime's neutral interfaces only (Device, Stream, Event, Allocator), so
// the same code measures on CUDA, ROCm and the host platform (which is how CI tests it).
//
//   KILN_ASSIGN_OR_RETURN(auto profiler, Profiler::Create(device, options));
//   KILN_RETURN_IF_ERROR(profiler->Prepare(instr));        // guarded, initialized buffers
//   Measurement ref = profiler->Profile(*reference, {.make_reference = true});
//   Measurement m = profiler->Profile(*candidate, {.best_us = best_so_far});
//
// Prepare allocates one redzone-guarded buffer per operand leaf and result leaf and fills the
// operands from a seeded generator in the element type's sensible range (floats uniform in
// [-1, 1): f32/bf16/f16 from a hash of seed, operand and index on several threads, the rest from
// random_literal.h; small integers), so runs are reproducible. Profile then, for one candidate:
//   1. allocates its scratch (guarded too) and fills the outputs with the redzone pattern, so an
//      output the candidate never writes reads as NaN;
//   2. runs it once (warm-up) and waits, up to timeout_s;
//   3. checks and refills every redzone;
//   4. copies the outputs back and compares them with the reference (output_compare.h), or keeps
//      them as the reference when asked to;
//   5. times `repetitions` runs with events, flushing the L2 cache before each one (a memset
//      of a scratch buffer twice the L2's size, from the DeviceDescription), and takes the
//      median; then checks the redzones once more. A first timed run too_slow_factor times
//      slower than the best time so far ends it early (the warm-up is not used for this: first
//      calls load modules and create handles, milliseconds for a microsecond kernel).
// The first failing step classifies the candidate (Verdict) and ends its profile; the failure is
// a value, never a crash or a log line. A launch failure leaves the stream in error, so the
// profiler replaces its stream before the next candidate.
//
// A kernel that never finishes cannot be cancelled through the neutral interfaces: after a
// timeout the profiler still waits for it before reusing the buffers.
//
// Not thread-safe; one Profiler per device, used from one thread (see DeviceLock for processes).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/autotune/backend.h"
#include "kiln/autotune/redzone_allocator.h"
#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"
#include "kiln/hlo/shape.h"
#include "kiln/runtime/device.h"

namespace kiln::autotune {

enum class Verdict {
  kOk,
  kCompileFailed,   // Backend::Compile returned an error
  kLaunchFailed,    // Launch or the stream reported an error (also: scratch allocation failed)
  kRedzoneWritten,  // wrote outside its buffers
  kWrongResult,     // outputs differ from the reference beyond the tolerance
  kTooSlow,         // first timed run slower than too_slow_factor × the best time so far
  kTimeout,         // warm-up did not finish within timeout_s
};
inline constexpr int kNumVerdicts = 7;
// "ok", "compile failed", "launch failed", "redzone written", "wrong result", "too slow",
// "timeout".
std::string_view VerdictName(Verdict verdict);

struct ProfileOptions {
  RedzoneOptions redzone;
  // Timed runs after the warm-up; the median is the candidate's time.
  int repetitions = 5;
  // Flush the L2 before each timed run so that small problems are not timed with hot caches.
  bool flush_l2 = true;
  // Seed of the input generator.
  uint64_t seed = 42;
  // A warm-up taking longer than this (wall clock) is a timeout.
  double timeout_s = 10;
  // A first timed run slower than this many times the best median so far ends the timing.
  double too_slow_factor = 4;
  // Relative tolerance of output comparisons; negative: per type (output_compare.h).
  double rtol = -1;
};

// What profiling one candidate found.
struct Measurement {
  Verdict verdict = Verdict::kOk;
  std::string message;  // why it failed (one line), empty when ok
  double median_us = 0;  // over the timed runs (the warm-up time when not timed)
  double min_us = 0;
  double max_us = 0;
  double warmup_us = 0;
  uint64_t scratch_bytes = 0;
  bool timed = false;  // median_us comes from timed runs

  bool ok() const { return verdict == Verdict::kOk; }
};

struct ProfileRequest {
  // Keep this candidate's outputs as the reference instead of comparing them (the caller asks
  // for this only for candidates of backends that cannot produce wrong results). Ignored when
  // the candidate fails.
  bool make_reference = false;
  // Best median so far, for the too-slow cut-off (infinity: none yet).
  double best_us = std::numeric_limits<double>::infinity();
  // Run the timed repetitions (the determinism mode only needs validity).
  bool time_it = true;
};

class Profiler {
 public:
  // `device` must outlive the profiler.
  static StatusOr<std::unique_ptr<Profiler>> Create(runtime::Device& device,
                                                    const ProfileOptions& options = {});
  ~Profiler();

  // Allocates and initializes the buffers of `instr` (replacing any previous instruction's) and
  // forgets the reference. Unimplemented for token or opaque operands/results.
  Status Prepare(const HloInstruction& instr);
  // The same from explicit operand and result shapes (tests).
  Status Prepare(const std::vector<Shape>& operand_shapes, const Shape& result_shape);

  Measurement Profile(Candidate& candidate, const ProfileRequest& request = {});

  bool has_reference() const { return !reference_.empty(); }
  const ProfileOptions& options() const { return options_; }
  runtime::Device& device() const { return device_; }

 private:
  Profiler(runtime::Device& device, const ProfileOptions& options)
      : device_(device), options_(options) {}
  Status ResetStream();
  Status ReleaseBuffers();
  // Waits for `event` up to the timeout; false when it did not complete in time.
  StatusOr<bool> WaitWithTimeout(runtime::Event& event);
  // Steps 3 and 4 and the timed runs; `m` holds the verdict so far.
  void CheckOutputs(Measurement& m, bool make_reference);
  void CheckRedzones(Measurement& m);

  runtime::Device& device_;
  ProfileOptions options_;
  // The prepared instruction asks for HIGHEST precision (output_compare.h CandidateRtol).
  bool highest_ = false;
  std::unique_ptr<runtime::Stream> stream_;
  std::unique_ptr<runtime::Event> start_, stop_;
  std::unique_ptr<RedzoneAllocator> redzones_;
  runtime::DeviceMemory flush_buffer_;  // L2 flush scratch (unguarded)
  std::vector<Shape> input_shapes_, output_shapes_;
  std::vector<runtime::DeviceMemory> inputs_, outputs_;
  std::vector<std::vector<uint8_t>> reference_;  // one host copy per output
};

// The array leaves of `shape` in order (a tuple contributes each of its leaves);
// Unimplemented for tokens and opaque values.
StatusOr<std::vector<Shape>> ArrayLeaves(const Shape& shape);
// Bytes one leaf takes in a candidate buffer (element count × PrimitiveByteWidth).
uint64_t LeafBytes(const Shape& leaf);

}  // namespace kiln::autotune
