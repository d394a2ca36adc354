#include "kiln/cuda/compiler/gpu_thunk.h"

#include <algorithm>
#include <unordered_map>

#include "kiln/base/strings.h"
#include "kiln/runtime/device.h"
#include "kiln/runtime/event.h"

namespace kiln::cuda {

std::string_view ThunkKindName(GpuThunk::Kind kind) {
  switch (kind) {
    case GpuThunk::Kind::kKernel: return "kernel";
    case GpuThunk::Kind::kGemm: return "gemm";
    case GpuThunk::Kind::kConv: return "conv";
    case GpuThunk::Kind::kCopy: return "copy";
    case GpuThunk::Kind::kSort: return "sort";
    case GpuThunk::Kind::kFft: return "fft";
    case GpuThunk::Kind::kHost: return "host";
    case GpuThunk::Kind::kWhile: return "while";
    case GpuThunk::Kind::kConditional: return "conditional";
    case GpuThunk::Kind::kAttention: return "attention";
    case GpuThunk::Kind::kCollective: return "collective";
    case GpuThunk::Kind::kSolver: return "solver";
  }
  return "?";
}

std::string GpuThunk::ToString() const { return StrCat(ThunkKindName(kind_), " %", name_); }

Status ThunkSequence::Initialize(const ThunkInitParams& params) {
  for (const auto& t : thunks_) KILN_RETURN_IF_ERROR(t->Initialize(params).WithContext(StrCat("%", t->name())));
  return OkStatus();
}

bool IndependentThunks(const GpuThunk& a, const GpuThunk& b) {
  if (!a.buffer_uses_known() || !b.buffer_uses_known()) return false;
  auto overlap = [](const BufferSlice& x, const BufferSlice& y) {
    return x.allocation == y.allocation && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
  };
  auto conflicts = [&](const GpuThunk& w, const GpuThunk& o) {
    for (const BufferSlice& x : w.writes()) {
      for (const BufferSlice& y : o.writes())
        if (overlap(x, y)) return true;
      for (const BufferSlice& y : o.reads())
        if (overlap(x, y)) return true;
    }
    return false;
  };
  return !conflicts(a, b) && !conflicts(b, a);
}

bool SideStreamLibraryCall(const GpuThunk& t) {
  return (t.kind() == GpuThunk::Kind::kGemm || t.kind() == GpuThunk::Kind::kConv) && !t.SyncsHost();
}

bool SideStreamKernel(const GpuThunk& t) {
  return t.kind() == GpuThunk::Kind::kKernel && t.workspace_bytes() == 0 && !t.SyncsHost();
}

int64_t ThunkSequence::PlanSideStream() {
  side_.assign(thunks_.size(), false);
  int64_t pairs = 0;
  for (size_t i = 0; i + 1 < thunks_.size(); ++i) {
    const GpuThunk& a = *thunks_[i];
    const GpuThunk& b = *thunks_[i + 1];
    if (((SideStreamLibraryCall(a) && SideStreamKernel(b)) || (SideStreamKernel(a) && SideStreamLibraryCall(b))) &&
        IndependentThunks(a, b)) {
      side_[i] = true;
      ++pairs;
      ++i;  // a thunk takes part in one pair at most
    }
  }
  for (const auto& t : thunks_) pairs += t->PlanNestedSideStreams();
  return pairs;
}

int64_t ThunkSequence::side_pairs() const { return std::count(side_.begin(), side_.end(), true); }

namespace {

Status RunOne(const GpuThunk& t, const ThunkExecuteParams& params) {
  if (params.profiler) KILN_RETURN_IF_ERROR(params.profiler->Begin(t, *params.stream));
  Status s = t.Execute(params);
  if (!s.ok()) return s.WithContext(StrCat("%", t.name()));
  if (params.profiler) KILN_RETURN_IF_ERROR(params.profiler->End(t, *params.stream));
  return OkStatus();
}

}  // namespace

Status RunSideStreamPair(const GpuThunk& library, const GpuThunk& kernel, const ThunkExecuteParams& params) {
  // Note [Side stream]: fork, the library call on the main stream, the kernel on the side one,
  // join.
  KILN_RETURN_IF_ERROR(params.stream->RecordEvent(*params.fork));
  KILN_RETURN_IF_ERROR(params.side_stream->WaitEvent(*params.fork));
  ThunkExecuteParams side = params;
  side.stream = params.side_stream;
  KILN_RETURN_IF_ERROR(RunOne(library, params));
  KILN_RETURN_IF_ERROR(RunOne(kernel, side));
  KILN_RETURN_IF_ERROR(params.side_stream->RecordEvent(*params.join));
  return params.stream->WaitEvent(*params.join);
}

Status ThunkSequence::Execute(const ThunkExecuteParams& params) const {
  return ExecuteRange(params, 0, thunks_.size());
}

Status ThunkSequence::ExecuteRange(const ThunkExecuteParams& params, size_t begin, size_t end) const {
  const bool two_streams = params.side_stream && params.fork && params.join;
  end = std::min(end, thunks_.size());
  for (size_t i = begin; i < end; ++i) {
    if (two_streams && i + 1 < end && i < side_.size() && side_[i]) {
      const bool first_is_kernel = thunks_[i]->kind() == GpuThunk::Kind::kKernel;
      KILN_RETURN_IF_ERROR(RunSideStreamPair(*thunks_[first_is_kernel ? i + 1 : i], *thunks_[first_is_kernel ? i : i + 1],
                                             params));
      ++i;
      continue;
    }
    KILN_RETURN_IF_ERROR(RunOne(*thunks_[i], params));
  }
  return OkStatus();
}

int64_t ThunkSequence::EnqueuedOps() const {
  int64_t n = 0;
  for (const auto& t : thunks_) n = SaturatingAdd(n, t->EnqueuedOps());
  return n;
}

bool ThunkSequence::SyncsHost() const {
  for (const GpuThunk* t : Flatten())
    if (t->SyncsHost()) return true;
  return false;
}

uint64_t ThunkSequence::WorkspaceBytes() const {
  uint64_t w = 0;
  for (const GpuThunk* t : Flatten()) w = std::max(w, t->workspace_bytes());
  return w;
}

std::vector<const GpuThunk*> ThunkSequence::Flatten() const {
  std::vector<const GpuThunk*> out;
  std::vector<const GpuThunk*> stack;
  for (auto it = thunks_.rbegin(); it != thunks_.rend(); ++it) stack.push_back(it->get());
  while (!stack.empty()) {
    const GpuThunk* t = stack.back();
    stack.pop_back();
    out.push_back(t);
    std::vector<const GpuThunk*> n = t->nested();
    for (auto it = n.rbegin(); it != n.rend(); ++it) stack.push_back(*it);
  }
  return out;
}

// ---- ThunkProfiler ----

StatusOr<std::unique_ptr<ThunkProfiler>> ThunkProfiler::Create(runtime::Device& device) {
  return std::unique_ptr<ThunkProfiler>(new ThunkProfiler(device));
}

StatusOr<runtime::Event*> ThunkProfiler::NextEvent() {
  if (used_ == events_.size()) {
    runtime::EventOptions o;
    o.enable_timing = true;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Event> e, device_.CreateEvent(o));
    events_.push_back(std::move(e));
  }
  return events_[used_++].get();
}

Status ThunkProfiler::Begin(const GpuThunk& thunk, runtime::Stream& stream) {
  KILN_ASSIGN_OR_RETURN(runtime::Event * e, NextEvent());
  KILN_RETURN_IF_ERROR(stream.RecordEvent(*e));
  open_.push_back({&thunk, e, nullptr, &stream});
  return OkStatus();
}

Status ThunkProfiler::End(const GpuThunk& thunk, runtime::Stream& stream) {
  if (open_.empty() || open_.back().thunk != &thunk) return Internal("profiler: unbalanced End for %", thunk.name());
  KILN_ASSIGN_OR_RETURN(runtime::Event * e, NextEvent());
  KILN_RETURN_IF_ERROR(stream.RecordEvent(*e));
  Pending p = open_.back();
  open_.pop_back();
  p.end = e;
  pending_.push_back(p);
  return OkStatus();
}

Status ThunkProfiler::Collect() {
  last_run_.clear();
  // The run's first recorded event is events_[0]: the timeline's origin.
  const runtime::Event* origin = pending_.empty() ? nullptr : events_[0].get();
  const bool count = runs_++ > 0;
  std::unordered_map<const GpuThunk*, size_t> index;
  for (size_t i = 0; i < entries_.size(); ++i) index[entries_[i].thunk] = i;
  const runtime::Stream* main = pending_.empty() ? nullptr : pending_.front().stream;
  for (const Pending& p : pending_) {
    KILN_ASSIGN_OR_RETURN(float ms, p.end->ElapsedMillisSince(*p.begin));
    KILN_ASSIGN_OR_RETURN(float start, p.begin->ElapsedMillisSince(*origin));
    last_run_.push_back({p.thunk, start, ms, p.stream == main ? 0 : 1});
    if (!count) continue;
    auto it = index.find(p.thunk);
    if (it == index.end()) {
      index[p.thunk] = entries_.size();
      entries_.push_back({p.thunk, 0, 0});
      it = index.find(p.thunk);
    }
    entries_[it->second].total_ms += ms;
    entries_[it->second].count += 1;
  }
  pending_.clear();
  open_.clear();
  used_ = 0;
  return OkStatus();
}

void ThunkProfiler::Reset() {
  runs_ = 0;
  entries_.clear();
  last_run_.clear();
  pending_.clear();
  open_.clear();
  used_ = 0;
}

}  // namespace kiln::cuda
