#include "kiln/cpu/control_flow_thunks.h"

#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/passes/thunk_util.h"

namespace kiln::cpu {

namespace {

std::vector<const Thunk*> Pointers(const ThunkSequence& s) {
  std::vector<const Thunk*> out;
  for (const auto& t : s.thunks()) out.push_back(t.get());
  return out;
}

Status CopySlice(const ExecuteParams& p, const BufferSlice& src, const BufferSlice& dst) {
  if (src == dst || dst.size == 0) return OkStatus();
  if (src.size != dst.size)
    return Internal("cpu: copy between slices of different sizes ", src.ToString(), " -> ", dst.ToString());
  KILN_ASSIGN_OR_RETURN(uint8_t * s, p.buffers->Get(src));
  KILN_ASSIGN_OR_RETURN(uint8_t * d, p.buffers->Get(dst));
  CopyBytes(d, s, dst.size, p.pool);
  return OkStatus();
}

}  // namespace

CopyThunk::CopyThunk(std::string name, BufferSlice src, BufferSlice dst)
    : Thunk(Kind::kCopy, std::move(name), {BufferUse::Read(src), BufferUse::Write(dst)}, dst.size / 2),
      src_(src), dst_(dst) {}

std::string CopyThunk::ToString() const {
  return StrCat("copy %", name(), " ", src_.ToString(), " -> ", dst_.ToString());
}

Status CopyThunk::Execute(const ExecuteParams& params) const { return CopySlice(params, src_, dst_); }

WhileThunk::WhileThunk(std::string name, ThunkSequence condition, ThunkSequence body,
                       BufferSlice predicate, WhileCopyPlan plan, std::optional<TripCount> trips)
    : Thunk(Kind::kWhile, std::move(name), {}, INT64_MAX), condition_(std::move(condition)),
      body_(std::move(body)), predicate_(predicate), plan_(std::move(plan)), trips_(trips) {
  std::vector<BufferUse> uses = condition_.CollectUses();
  std::vector<BufferUse> body_uses = body_.CollectUses();
  uses.insert(uses.end(), body_uses.begin(), body_uses.end());
  uses.push_back(BufferUse::Read(predicate_));
  for (size_t j = 0; j < plan_.leaves.size(); ++j) {
    if (plan_.init[j].valid()) uses.push_back(BufferUse::Read(plan_.init[j]));
    // A state leaf that shares its init buffer and is never copied into is only read here (a
    // body that updates it in place reports that write among its own uses).
    const bool shared = !plan_.copy_init[j] && !plan_.copy_body_result[j] && plan_.state[j] == plan_.init[j];
    uses.push_back(shared ? BufferUse::Read(plan_.state[j]) : BufferUse::Write(plan_.state[j]));
    if (plan_.body_result[j].valid()) uses.push_back(BufferUse::Read(plan_.body_result[j]));
    if (plan_.staging[j].valid()) uses.push_back(BufferUse::Write(plan_.staging[j]));
  }
  AddUses(uses);
}

std::vector<const Thunk*> WhileThunk::nested() const {
  std::vector<const Thunk*> out = Pointers(condition_);
  std::vector<const Thunk*> b = Pointers(body_);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::string WhileThunk::ToString() const {
  int64_t in = 0, in_bytes = 0, per = 0, per_bytes = 0;
  for (size_t j = 0; j < plan_.leaves.size(); ++j) {
    if (plan_.copy_init[j] && plan_.init[j].valid()) {
      ++in;
      in_bytes += plan_.state[j].size;
    }
    if (plan_.copy_body_result[j] && plan_.body_result[j].valid()) {
      ++per;
      per_bytes += plan_.state[j].size;
    }
  }
  return StrCat("while %", name(), trips_ ? StrCat(" (", trips_->trips, " trips, known)") : "", ": copies in ", in,
                in == 1 ? " leaf (" : " leaves (", HumanBytes(in_bytes), "), per iteration ", per,
                per == 1 ? " leaf (" : " leaves (", HumanBytes(per_bytes), ")");
}

Status WhileThunk::CopyBodyResults(const ExecuteParams& params) const {
  return ForEachLoopStateCopy(
      plan_, [&](const BufferSlice& src, const BufferSlice& dst) { return CopySlice(params, src, dst); });
}

Status WhileThunk::Execute(const ExecuteParams& params) const {
  const size_t n = plan_.leaves.size();
  for (size_t j = 0; j < n; ++j)
    if (plan_.copy_init[j] && plan_.init[j].valid())
      KILN_RETURN_IF_ERROR(CopySlice(params, plan_.init[j], plan_.state[j]));
  if (trips_) {
    for (int64_t k = 0; k < trips_->trips; ++k) {
      if (trips_->run_condition) KILN_RETURN_IF_ERROR(condition_.Execute(params));
      KILN_RETURN_IF_ERROR(body_.Execute(params));
      KILN_RETURN_IF_ERROR(CopyBodyResults(params));
    }
    if (trips_->run_condition) KILN_RETURN_IF_ERROR(condition_.Execute(params));
    return OkStatus();
  }
  KILN_ASSIGN_OR_RETURN(const uint8_t* pred, params.buffers->Get(predicate_));
  if (!pred) return Internal("cpu: while %", name(), " has no predicate buffer");
  for (;;) {
    KILN_RETURN_IF_ERROR(condition_.Execute(params));
    if (*pred == 0) break;
    KILN_RETURN_IF_ERROR(body_.Execute(params));
    KILN_RETURN_IF_ERROR(CopyBodyResults(params));
  }
  return OkStatus();
}

ConditionalThunk::ConditionalThunk(std::string name, BufferSlice index, PrimitiveType index_type,
                                   std::vector<ThunkSequence> branches,
                                   std::vector<std::vector<Copy>> result_copies,
                                   std::vector<BufferUse> result_writes)
    : Thunk(Kind::kConditional, std::move(name), {}, INT64_MAX), index_(index),
      index_type_(index_type), branches_(std::move(branches)), result_copies_(std::move(result_copies)) {
  std::vector<BufferUse> uses = {BufferUse::Read(index_)};
  for (const ThunkSequence& b : branches_) {
    std::vector<BufferUse> u = b.CollectUses();
    uses.insert(uses.end(), u.begin(), u.end());
  }
  for (const auto& copies : result_copies_)
    for (const Copy& c : copies) uses.push_back(BufferUse::Read(c.src));
  uses.insert(uses.end(), result_writes.begin(), result_writes.end());
  AddUses(uses);
}

std::vector<const Thunk*> ConditionalThunk::nested() const {
  std::vector<const Thunk*> out;
  for (const ThunkSequence& b : branches_) {
    std::vector<const Thunk*> p = Pointers(b);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

Status ConditionalThunk::Execute(const ExecuteParams& params) const {
  KILN_ASSIGN_OR_RETURN(const uint8_t* p, params.buffers->Get(index_));
  if (!p) return Internal("cpu: conditional %", name(), " has no index buffer");
  const int64_t n = static_cast<int64_t>(branches_.size());
  const int64_t branch = SelectConditionalBranch(index_type_, p, n);
  if (branch < 0 || branch >= n) return Internal("cpu: conditional %", name(), " has no branch ", branch);
  KILN_RETURN_IF_ERROR(branches_[branch].Execute(params));
  for (const Copy& c : result_copies_[branch]) KILN_RETURN_IF_ERROR(CopySlice(params, c.src, c.dst));
  return OkStatus();
}

CallThunk::CallThunk(std::string name, ThunkSequence callee)
    : Thunk(Kind::kCall, std::move(name), {}, INT64_MAX), callee_(std::move(callee)) {
  AddUses(callee_.CollectUses());
}

std::vector<const Thunk*> CallThunk::nested() const { return Pointers(callee_); }

Status CallThunk::Execute(const ExecuteParams& params) const { return callee_.Execute(params); }

}  // namespace kiln::cpu
