#include "kiln/cpu/thunk_sequence.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <queue>

namespace kiln::cpu {

std::vector<std::vector<int32_t>> ComputeThunkDependencies(
    std::span<const std::vector<BufferUse>> uses) {
  // Per allocation, the accesses that later thunks may still conflict with. A write that
  // covers an earlier access's bytes supersedes it: anything later that overlaps those bytes
  // overlaps the write and so depends on it, and the write depends on the earlier access.
  struct Access {
    int64_t begin, end;
    int32_t thunk;
    bool write;
  };
  std::map<int64_t, std::vector<Access>> live;
  std::vector<std::vector<int32_t>> deps(uses.size());
  for (int32_t t = 0; t < static_cast<int32_t>(uses.size()); ++t) {
    std::vector<int32_t>& d = deps[t];
    for (const BufferUse& u : uses[t]) {
      if (u.slice.size <= 0 || u.slice.allocation < 0) continue;
      auto it = live.find(u.slice.allocation);
      if (it == live.end()) continue;
      const int64_t b = u.slice.offset, e = u.slice.offset + u.slice.size;
      for (const Access& a : it->second)
        if (a.thunk != t && a.begin < e && b < a.end && (a.write || u.is_write())) d.push_back(a.thunk);
    }
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    for (const BufferUse& u : uses[t]) {
      if (u.slice.size <= 0 || u.slice.allocation < 0) continue;
      std::vector<Access>& list = live[u.slice.allocation];
      const int64_t b = u.slice.offset, e = u.slice.offset + u.slice.size;
      if (u.is_write())
        std::erase_if(list, [&](const Access& a) { return a.thunk != t && b <= a.begin && a.end <= e; });
      list.push_back({b, e, t, u.is_write()});
    }
  }
  return deps;
}

ThunkSequence::ThunkSequence(std::vector<std::unique_ptr<Thunk>> thunks, const ExecutorOptions& options)
    : thunks_(std::move(thunks)) {
  std::vector<std::vector<BufferUse>> uses;
  uses.reserve(thunks_.size());
  for (const auto& t : thunks_) uses.push_back(t->uses());
  predecessors_ = ComputeThunkDependencies(uses);
  // Thunks that run on the calling thread (cost INT64_MAX: control flow, and the kernels that
  // meet other participants -- collectives, send / recv) keep their schedule order among
  // themselves: every participant then meets its peers in the same order, and a recv-done
  // never blocks the calling thread before the send the schedule put ahead of it
  // (passes/send_recv_ordering.h) has run.
  int32_t last_inline = -1;
  for (int32_t i = 0; i < static_cast<int32_t>(thunks_.size()); ++i) {
    if (thunks_[i]->cost() != INT64_MAX) continue;
    std::vector<int32_t>& d = predecessors_[i];
    if (last_inline >= 0 && std::find(d.begin(), d.end(), last_inline) == d.end())
      d.insert(std::upper_bound(d.begin(), d.end(), last_inline), last_inline);
    last_inline = i;
  }
  successors_.resize(thunks_.size());
  for (size_t i = 0; i < thunks_.size(); ++i)
    for (int32_t p : predecessors_[i]) successors_[p].push_back(static_cast<int32_t>(i));
  int64_t medium = 0;
  for (const auto& t : thunks_)
    medium += t->cost() >= options.min_offload_cost && t->cost() < options.min_inline_parallel_cost;
  concurrent_ = medium >= 2;
}

std::vector<BufferUse> ThunkSequence::CollectUses() const {
  std::vector<BufferUse> out;
  for (const auto& t : thunks_) out.insert(out.end(), t->uses().begin(), t->uses().end());
  return out;
}

Status RunThunk(const Thunk& thunk, const ExecuteParams& params) {
  if (!params.profile || thunk.id() < 0 || thunk.id() >= params.profile->size())
    return thunk.Execute(params);
  auto start = std::chrono::steady_clock::now();
  Status s = thunk.Execute(params);
  params.profile->Add(thunk.id(), std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count());
  return s;
}

Status ThunkSequence::Execute(const ExecuteParams& params, std::vector<int32_t>* trace) const {
  const bool sequential = params.executor && params.executor->sequential;
  if (!concurrent_ || !params.pool || params.pool->num_threads() < 1 || sequential)
    return ExecuteInOrder(params, trace);
  return ExecuteConcurrently(params, trace);
}

Status ThunkSequence::ExecuteInOrder(const ExecuteParams& params, std::vector<int32_t>* trace) const {
  for (size_t i = 0; i < thunks_.size(); ++i) {
    if (trace) trace->push_back(static_cast<int32_t>(i));
    Status s = RunThunk(*thunks_[i], params);
    if (!s.ok()) return s;
  }
  return OkStatus();
}

Status ThunkSequence::ExecuteConcurrently(const ExecuteParams& params, std::vector<int32_t>* trace) const {
  static const ExecutorOptions kDefaults;
  const ExecutorOptions& opts = params.executor ? *params.executor : kDefaults;
  const int32_t n = static_cast<int32_t>(thunks_.size());
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int32_t> pending;
    // Ready thunks, earliest in schedule order first.
    std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> ready;
    int32_t done = 0;
    int32_t outstanding = 0;  // running on workers
    Status error;
  } st;
  st.pending.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    st.pending[i] = static_cast<int32_t>(predecessors_[i].size());
    if (st.pending[i] == 0) st.ready.push(i);
  }
  // Called with st.mu held.
  auto complete = [&](int32_t t, Status s) {
    ++st.done;
    if (!s.ok() && st.error.ok()) st.error = std::move(s);
    for (int32_t succ : successors_[t])
      if (--st.pending[succ] == 0) st.ready.push(succ);
  };
  auto is_medium = [&](int32_t t) {
    int64_t c = thunks_[t]->cost();
    return c >= opts.min_offload_cost && c < opts.min_inline_parallel_cost;
  };
  std::unique_lock<std::mutex> lock(st.mu);
  while (st.done < n) {
    if (!st.error.ok()) {
      // Let the workers finish what they started; start nothing new.
      st.cv.wait(lock, [&] { return st.outstanding == 0; });
      break;
    }
    if (st.ready.empty()) {
      if (st.outstanding == 0) return Internal("cpu executor: no thunk ready and none running (a cycle?)");
      st.cv.wait(lock, [&] { return !st.ready.empty() || st.outstanding == 0 || st.done == n; });
      continue;
    }
    // This thread takes the earliest ready thunk that is not medium (else one medium thunk);
    // the other medium ones go to workers, the rest wait for this thread.
    std::vector<int32_t> all;
    while (!st.ready.empty()) {
      all.push_back(st.ready.top());
      st.ready.pop();
    }
    int32_t mine = -1;
    for (int32_t t : all)
      if (!is_medium(t)) {
        mine = t;
        break;
      }
    if (mine < 0) mine = all.back();
    for (int32_t t : all) {
      if (t == mine) continue;
      if (!is_medium(t)) {
        st.ready.push(t);
        continue;
      }
      ++st.outstanding;
      if (trace) trace->push_back(t);
      params.pool->Schedule([&, t] {
        Status s = RunThunk(*thunks_[t], params);
        std::lock_guard<std::mutex> g(st.mu);
        complete(t, std::move(s));
        --st.outstanding;
        st.cv.notify_all();
      });
    }
    if (trace) trace->push_back(mine);
    lock.unlock();
    Status s = RunThunk(*thunks_[mine], params);
    lock.lock();
    complete(mine, std::move(s));
  }
  // Workers may still hold the lock briefly after their last completion; wait for them so
  // that `st` outlives every closure.
  st.cv.wait(lock, [&] { return st.outstanding == 0; });
  return st.error;
}

}  // namespace kiln::cpu
