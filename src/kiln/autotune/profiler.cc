#include "kiln/autotune/profiler.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "kiln/autotune/output_compare.h"
#include "kiln/base/strings.h"
#include "kiln/hlo/float_types.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::autotune {

namespace {

uint64_t SplitMix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// f32 / bf16 / f16 inputs, uniform in [-1, 1), each element a hash of (seed, stream, index) so
// that threads fill disjoint chunks: MakeRandomLiteral sets one element at a time through
// Literal's generic access, seconds for the 128-MiB operands of a large GEMM. False for other
// types (the caller uses MakeRandomLiteral).
template <typename T>
void FillUniform(uint8_t* out, int64_t n, uint64_t key) {
  const int threads = static_cast<int>(std::clamp<int64_t>(
      std::min<int64_t>(std::thread::hardware_concurrency(), n / (1 << 20) + 1), 1, 16));
  const int64_t chunk = (n + threads - 1) / threads;
  auto body = [&](int t) {
    T* p = reinterpret_cast<T*>(out);
    for (int64_t i = t * chunk, end = std::min(n, (t + 1) * chunk); i < end; ++i) {
      const double u = static_cast<double>(SplitMix(key ^ SplitMix(static_cast<uint64_t>(i))) >> 11) *
                           0x1p-52 - 1.0;
      p[i] = static_cast<T>(static_cast<float>(u));
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(body, t);
  body(0);
  for (std::thread& th : pool) th.join();
}

bool FillRandomFast(const Shape& leaf, uint64_t seed, uint64_t stream, std::vector<uint8_t>& out) {
  const int64_t n = leaf.num_elements();
  const uint64_t key = SplitMix(seed ^ SplitMix(stream + 0x632be59bd9b4e019ull));
  switch (leaf.element_type()) {
    case PrimitiveType::kF32: out.resize(n * 4); FillUniform<float>(out.data(), n, key); return true;
    case PrimitiveType::kBF16: out.resize(n * 2); FillUniform<bfloat16>(out.data(), n, key); return true;
    case PrimitiveType::kF16: out.resize(n * 2); FillUniform<half>(out.data(), n, key); return true;
    default: return false;
  }
}

constexpr uint64_t kMaxFlushBytes = 512ull << 20;

std::string FirstLine(std::string_view s) {
  size_t nl = s.find('\n');
  return std::string(nl == std::string_view::npos ? s : s.substr(0, nl));
}

void Fail(Measurement& m, Verdict verdict, std::string message) {
  if (m.verdict != Verdict::kOk) return;  // the first failure classifies
  m.verdict = verdict;
  m.message = FirstLine(message);
}

}  // namespace

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kOk: return "ok";
    case Verdict::kCompileFailed: return "compile failed";
    case Verdict::kLaunchFailed: return "launch failed";
    case Verdict::kRedzoneWritten: return "redzone written";
    case Verdict::kWrongResult: return "wrong result";
    case Verdict::kTooSlow: return "too slow";
    case Verdict::kTimeout: return "timeout";
  }
  return "?";
}

StatusOr<std::vector<Shape>> ArrayLeaves(const Shape& shape) {
  std::vector<Shape> leaves;
  std::vector<const Shape*> stack = {&shape};
  while (!stack.empty()) {
    const Shape* s = stack.back();
    stack.pop_back();
    if (s->IsTuple()) {
      for (auto it = s->tuple_shapes().rbegin(); it != s->tuple_shapes().rend(); ++it) {
        stack.push_back(&*it);
      }
    } else if (s->IsArray()) {
      leaves.push_back(*s);
    } else {
      return Unimplemented("autotuning cannot profile token or opaque values");
    }
  }
  return leaves;
}

uint64_t LeafBytes(const Shape& leaf) {
  return static_cast<uint64_t>(leaf.num_elements()) * PrimitiveByteWidth(leaf.element_type());
}

StatusOr<std::unique_ptr<Profiler>> Profiler::Create(runtime::Device& device,
                                                     const ProfileOptions& options) {
  if (options.repetitions < 1) return InvalidArgument("profiler repetitions must be at least 1");
  std::unique_ptr<Profiler> p(new Profiler(device, options));
  KILN_RETURN_IF_ERROR(p->ResetStream());
  KILN_ASSIGN_OR_RETURN(p->start_, device.CreateEvent({.enable_timing = true}));
  KILN_ASSIGN_OR_RETURN(p->stop_, device.CreateEvent({.enable_timing = true}));
  uint64_t l2 = device.description().l2_cache_bytes;
  if (options.flush_l2 && l2 > 0) {
    uint64_t bytes = std::min(2 * l2, kMaxFlushBytes);
    KILN_ASSIGN_OR_RETURN(p->flush_buffer_,
                          device.device_allocator().Allocate(bytes, "autotune L2 flush"));
  }
  return p;
}

Profiler::~Profiler() {
  (void)ReleaseBuffers();
  if (!flush_buffer_.is_null()) (void)device_.device_allocator().Deallocate(flush_buffer_);
}

Status Profiler::ResetStream() {
  if (stream_) (void)stream_->Synchronize();  // a failed stream still drains its queue
  stream_.reset();
  KILN_ASSIGN_OR_RETURN(stream_, device_.CreateStream({}));
  if (redzones_) redzones_->set_stream(stream_.get());
  return OkStatus();
}

Status Profiler::ReleaseBuffers() {
  redzones_.reset();  // synchronizes, frees every guarded buffer
  inputs_.clear();
  outputs_.clear();
  input_shapes_.clear();
  output_shapes_.clear();
  reference_.clear();
  return OkStatus();
}

Status Profiler::Prepare(const HloInstruction& instr) {
  std::vector<Shape> operands;
  for (const HloInstruction* op : instr.operands()) operands.push_back(op->shape());
  KILN_RETURN_IF_ERROR(Prepare(operands, instr.shape()));
  highest_ = AsksHighestPrecision(instr);  // f32 outputs then at kHighestF32Rtol
  return OkStatus();
}

Status Profiler::Prepare(const std::vector<Shape>& operand_shapes, const Shape& result_shape) {
  KILN_RETURN_IF_ERROR(ReleaseBuffers());
  highest_ = false;
  for (const Shape& s : operand_shapes) {
    KILN_ASSIGN_OR_RETURN(std::vector<Shape> leaves, ArrayLeaves(s));
    input_shapes_.insert(input_shapes_.end(), leaves.begin(), leaves.end());
  }
  KILN_ASSIGN_OR_RETURN(output_shapes_, ArrayLeaves(result_shape));
  redzones_ = std::make_unique<RedzoneAllocator>(device_.device_allocator(), stream_.get(),
                                                 options_.redzone);
  // Host copies must live until the uploads have run.
  std::vector<Literal> values;
  std::vector<std::vector<uint8_t>> fast(input_shapes_.size());
  values.reserve(input_shapes_.size());
  for (size_t i = 0; i < input_shapes_.size(); ++i) {
    const Shape& leaf = input_shapes_[i];
    KILN_ASSIGN_OR_RETURN(runtime::DeviceMemory buffer,
                          redzones_->Allocate(LeafBytes(leaf), StrCat("input ", i)));
    inputs_.push_back(buffer);
    if (buffer.is_null()) continue;
    if (FillRandomFast(leaf, options_.seed, i, fast[i]) && fast[i].size() == buffer.size) {
      KILN_RETURN_IF_ERROR(stream_->MemcpyHostToDevice(buffer, fast[i].data(), buffer.size));
      continue;
    }
    values.push_back(MakeRandomLiteral(leaf, options_.seed, i));
    KILN_RETURN_IF_ERROR(
        stream_->MemcpyHostToDevice(buffer, values.back().untyped_data(), buffer.size));
  }
  for (size_t i = 0; i < output_shapes_.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(runtime::DeviceMemory buffer,
                          redzones_->Allocate(LeafBytes(output_shapes_[i]), StrCat("output ", i)));
    outputs_.push_back(buffer);
  }
  return stream_->Synchronize();
}

StatusOr<bool> Profiler::WaitWithTimeout(runtime::Event& event) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.timeout_s));
  for (int polls = 0;; ++polls) {
    KILN_ASSIGN_OR_RETURN(bool done, event.IsComplete());
    if (done) return true;
    if (Clock::now() >= deadline) return false;
    if (polls < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 2000 ? 50 : 1000));
    }
  }
}

void Profiler::CheckRedzones(Measurement& m) {
  if (m.verdict != Verdict::kOk) return;
  StatusOr<std::vector<RedzoneDamage>> damage = redzones_->CheckAndRefill();
  if (!damage.ok()) {
    Fail(m, Verdict::kLaunchFailed, StrCat("reading redzones: ", damage.status().message()));
    return;
  }
  if (!damage->empty()) {
    std::string what = (*damage)[0].ToString();
    if (damage->size() > 1) what += StrCat(" (and ", damage->size() - 1, " more redzones)");
    Fail(m, Verdict::kRedzoneWritten, what);
  }
}

void Profiler::CheckOutputs(Measurement& m, bool make_reference) {
  if (m.verdict != Verdict::kOk) return;
  if (!make_reference && reference_.empty()) return;  // nothing to compare with
  std::vector<std::vector<uint8_t>> host(outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    host[i].resize(outputs_[i].size);
    if (outputs_[i].is_null()) continue;
    Status s = stream_->MemcpyDeviceToHost(host[i].data(), outputs_[i], outputs_[i].size);
    if (!s.ok()) return Fail(m, Verdict::kLaunchFailed, StrCat("reading outputs: ", s.message()));
  }
  if (Status s = stream_->Synchronize(); !s.ok()) {
    return Fail(m, Verdict::kLaunchFailed, StrCat("reading outputs: ", s.message()));
  }
  if (make_reference) {
    reference_ = std::move(host);
    return;
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    CompareResult c =
        CompareArrays(output_shapes_[i], host[i].data(), reference_[i].data(),
                      CandidateRtol(output_shapes_[i].element_type(), highest_, options_.rtol));
    if (!c.ok) {
      return Fail(m, Verdict::kWrongResult,
                  StrCat(outputs_.size() > 1 ? StrCat("output ", i, ": ") : std::string(),
                         c.ToString()));
    }
  }
}

Measurement Profiler::Profile(Candidate& candidate, const ProfileRequest& request) {
  Measurement m;
  if (!redzones_) {
    Fail(m, Verdict::kLaunchFailed, "the profiler has no buffers (Prepare was not called)");
    return m;
  }
  // A failed stream stays failed: start every candidate on a healthy one.
  bool stream_failed = false;
  auto launch_failed = [&](const Status& s, std::string_view when) {
    Fail(m, Verdict::kLaunchFailed, StrCat(when, ": ", s.message()));
    stream_failed = true;
  };

  m.scratch_bytes = candidate.scratch_bytes();
  runtime::DeviceMemory scratch;
  if (m.scratch_bytes > 0) {
    StatusOr<runtime::DeviceMemory> s = redzones_->Allocate(m.scratch_bytes, "scratch");
    if (!s.ok()) {
      Fail(m, Verdict::kLaunchFailed,
           StrCat("allocating ", HumanBytes(m.scratch_bytes), " of scratch: ", s.status().message()));
      return m;
    }
    scratch = *s;
  }
  CandidateBuffers buffers{inputs_, outputs_, scratch};

  // 1-2: outputs poisoned, one warm-up run under the timeout.
  Status s = OkStatus();
  for (const runtime::DeviceMemory& out : outputs_) {
    if (s.ok() && !out.is_null()) s = stream_->Memset8(out, options_.redzone.pattern);
  }
  if (s.ok()) s = stream_->RecordEvent(*start_);
  if (s.ok()) {
    s = candidate.Launch(*stream_, buffers);
    if (!s.ok()) launch_failed(s, "launch");
  }
  if (m.ok() && s.ok()) s = stream_->RecordEvent(*stop_);
  if (m.ok() && !s.ok()) launch_failed(s, "launch");
  if (m.ok()) {
    StatusOr<bool> done = WaitWithTimeout(*stop_);
    if (!done.ok()) {
      launch_failed(done.status(), "running");
    } else if (!*done) {
      Fail(m, Verdict::kTimeout, StrCat("still running after ", options_.timeout_s, " s"));
    }
  }
  // Also after a timeout: the buffers are reused only once the candidate has finished.
  if (Status sync = stream_->Synchronize(); !sync.ok()) launch_failed(sync, "running");
  if (m.ok()) {
    StatusOr<float> ms = stop_->ElapsedMillisSince(*start_);
    if (ms.ok()) m.warmup_us = *ms * 1000.0;
    m.median_us = m.min_us = m.max_us = m.warmup_us;
  }

  // 3-4: redzones, outputs.
  if (!stream_failed) CheckRedzones(m);
  if (!stream_failed) CheckOutputs(m, request.make_reference);

  // 5: timing. The warm-up is no measure of speed (first calls load modules, create handles,
  // set up workspaces: milliseconds for a microsecond kernel), so the too-slow cut-off looks at
  // the first timed run.
  if (m.ok() && request.time_it) {
    std::vector<double> times;
    for (int rep = 0; rep < options_.repetitions && m.ok(); ++rep) {
      Status t = OkStatus();
      if (!flush_buffer_.is_null()) {
        t = stream_->Memset8(flush_buffer_, static_cast<uint8_t>(rep & 1 ? 0x5A : 0xA5));
      }
      if (t.ok()) t = stream_->RecordEvent(*start_);
      if (t.ok()) t = candidate.Launch(*stream_, buffers);
      if (t.ok()) t = stream_->RecordEvent(*stop_);
      if (t.ok()) t = stream_->Synchronize();
      StatusOr<float> ms = t.ok() ? stop_->ElapsedMillisSince(*start_) : StatusOr<float>(t);
      if (!ms.ok()) {
        launch_failed(ms.status(), StrCat("timed run ", rep));
        break;
      }
      times.push_back(*ms * 1000.0);
      if (rep == 0 && times[0] > options_.too_slow_factor * request.best_us) {
        m.median_us = m.min_us = m.max_us = times[0];
        Fail(m, Verdict::kTooSlow,
             StrCat("first timed run took ", RoundTripDouble(times[0]), " us, best so far ",
                    RoundTripDouble(request.best_us), " us"));
      }
    }
    if (m.ok()) {
      std::sort(times.begin(), times.end());
      size_t n = times.size();
      m.median_us = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
      m.min_us = times.front();
      m.max_us = times.back();
      m.timed = true;
      CheckRedzones(m);
    }
  }

  if (stream_failed) {
    Status reset = ResetStream();
    if (!reset.ok()) m.message += StrCat(" (and recreating the stream failed: ", reset.message(), ")");
  }
  // A candidate that failed before its redzones were checked may still have damaged them:
  // restore the pattern so the next candidate is not blamed.
  if (!m.ok() && m.verdict != Verdict::kRedzoneWritten) (void)redzones_->CheckAndRefill();
  if (!scratch.is_null()) (void)redzones_->Free(scratch);
  return m;
}

}  // namespace kiln::autotune
