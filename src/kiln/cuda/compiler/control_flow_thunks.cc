#include "kiln/cuda/compiler/control_flow_thunks.h"

#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/conv_config.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/compiler/library_call_expander.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/clone.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/thunk_util.h"

namespace kiln::cuda {

Status CopySlice(const ThunkExecuteParams& params, const BufferSlice& src, const BufferSlice& dst) {
  if (src == dst || dst.size == 0) return OkStatus();
  if (src.size != dst.size)
    return Internal("copy between slices of different sizes ", src.ToString(), " -> ", dst.ToString());
  return params.stream->MemcpyDeviceToDevice(params.buffers->Get(dst), params.buffers->Get(src), dst.size);
}

// ---- CopyThunk ----

CopyThunk::CopyThunk(std::string name, std::vector<Copy> copies)
    : GpuThunk(Kind::kCopy, std::move(name),
               [&] {
                 int64_t b = 0;
                 for (const Copy& c : copies) b += 2 * c.dst.size;
                 return b;
               }()),
      copies_(std::move(copies)) {}

std::string CopyThunk::ToString() const {
  std::string s = StrCat("copy %", name());
  for (const Copy& c : copies_) s += StrCat(" ", c.src.ToString(), "->", c.dst.ToString());
  return s;
}

Status CopyThunk::Execute(const ThunkExecuteParams& params) const {
  for (const Copy& c : copies_) KILN_RETURN_IF_ERROR(CopySlice(params, c.src, c.dst));
  return OkStatus();
}

namespace {

std::vector<const GpuThunk*> Pointers(const ThunkSequence& s) {
  std::vector<const GpuThunk*> out;
  for (const auto& t : s.thunks()) out.push_back(t.get());
  return out;
}

StatusOr<runtime::OwnedDeviceMemory> PinnedBytes(const ThunkInitParams& params, uint64_t bytes) {
  return runtime::OwnedDeviceMemory::Allocate(params.device->pinned_host_allocator(), bytes, "control-flow predicate");
}

}  // namespace

// ---- WhileThunk ----

WhileThunk::WhileThunk(std::string name, ThunkSequence condition, ThunkSequence body, BufferSlice predicate,
                       WhileCopyPlan plan, std::optional<TripCount> trip_count)
    : GpuThunk(Kind::kWhile, std::move(name)),
      condition_(std::move(condition)),
      body_(std::move(body)),
      predicate_(predicate),
      plan_(std::move(plan)),
      trip_count_(trip_count) {}

bool WhileThunk::SyncsHost() const {
  if (!trip_count_) return true;
  return body_.SyncsHost() || (trip_count_->run_condition && condition_.SyncsHost());
}

int64_t WhileThunk::EnqueuedOps() const {
  int64_t per_trip = body_.EnqueuedOps() + static_cast<int64_t>(plan_.leaves.size());
  if (!trip_count_) return SaturatingAdd(condition_.EnqueuedOps(), per_trip);  // one trip's worth
  if (trip_count_->run_condition) per_trip = SaturatingAdd(per_trip, condition_.EnqueuedOps());
  return SaturatingAdd(SaturatingMul(per_trip, trip_count_->trips), static_cast<int64_t>(plan_.leaves.size()));
}

std::string WhileThunk::ToString() const {
  std::string s = StrCat("while %", name());
  if (trip_count_)
    s += StrCat(" (", trip_count_->trips, " trips, known", trip_count_->run_condition ? "; condition run for its effects" : "",
                ")");
  int64_t copies = 0, bytes = 0;
  for (size_t j = 0; j < plan_.leaves.size(); ++j)
    if (plan_.copy_body_result[j] && plan_.body_result[j].valid()) {
      ++copies;
      bytes += plan_.state[j].size;
    }
  s += StrCat(": per iteration ", copies, copies == 1 ? " copy (" : " copies (", HumanBytes(bytes), ")");
  return s;
}

std::vector<const GpuThunk*> WhileThunk::nested() const {
  std::vector<const GpuThunk*> out = Pointers(condition_);
  std::vector<const GpuThunk*> b = Pointers(body_);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

Status WhileThunk::Initialize(const ThunkInitParams& params) {
  KILN_RETURN_IF_ERROR(condition_.Initialize(params));
  KILN_RETURN_IF_ERROR(body_.Initialize(params));
  if (host_.get().is_null()) {
    KILN_ASSIGN_OR_RETURN(host_, PinnedBytes(params, 64));
  }
  return OkStatus();
}

Status WhileThunk::CopyBodyResults(const ThunkExecuteParams& params) const {
  const size_t n = plan_.leaves.size();
  // Copies are simultaneous: sources another copy overwrites were staged first.
  for (size_t j = 0; j < n; ++j)
    if (plan_.copy_body_result[j] && plan_.staging[j].valid())
      KILN_RETURN_IF_ERROR(CopySlice(params, plan_.body_result[j], plan_.staging[j]));
  for (size_t j = 0; j < n; ++j) {
    if (!plan_.copy_body_result[j]) continue;
    const BufferSlice& src = plan_.staging[j].valid() ? plan_.staging[j] : plan_.body_result[j];
    if (src.valid()) KILN_RETURN_IF_ERROR(CopySlice(params, src, plan_.state[j]));
  }
  return OkStatus();
}

Status WhileThunk::Execute(const ThunkExecuteParams& params) const {
  const size_t n = plan_.leaves.size();
  for (size_t j = 0; j < n; ++j)
    if (plan_.copy_init[j] && plan_.init[j].valid()) KILN_RETURN_IF_ERROR(CopySlice(params, plan_.init[j], plan_.state[j]));
  if (trip_count_) {
    // Known trip count: nothing is read back, the host never waits (a graph capture records
    // every iteration).
    for (int64_t k = 0; k < trip_count_->trips; ++k) {
      if (trip_count_->run_condition) KILN_RETURN_IF_ERROR(condition_.Execute(params));
      KILN_RETURN_IF_ERROR(body_.Execute(params));
      KILN_RETURN_IF_ERROR(CopyBodyResults(params));
    }
    if (trip_count_->run_condition) KILN_RETURN_IF_ERROR(condition_.Execute(params));
    return OkStatus();
  }
  runtime::DeviceMemory pred = params.buffers->Get(predicate_);
  if (pred.is_null()) return Internal("while %", name(), " has no predicate buffer");
  auto* host = static_cast<volatile uint8_t*>(host_.get().ptr);
  for (;;) {
    KILN_RETURN_IF_ERROR(condition_.Execute(params));
    KILN_RETURN_IF_ERROR(params.stream->MemcpyDeviceToHost(host_.get().ptr, pred, 1));
    KILN_RETURN_IF_ERROR(params.stream->Synchronize());
    if (*host == 0) break;
    KILN_RETURN_IF_ERROR(body_.Execute(params));
    KILN_RETURN_IF_ERROR(CopyBodyResults(params));
  }
  return OkStatus();
}

// ---- ConditionalThunk ----

ConditionalThunk::ConditionalThunk(std::string name, BufferSlice index, PrimitiveType index_type,
                                   std::vector<ThunkSequence> branches, std::vector<std::vector<Copy>> result_copies)
    : GpuThunk(Kind::kConditional, std::move(name)),
      index_(index),
      index_type_(index_type),
      branches_(std::move(branches)),
      result_copies_(std::move(result_copies)) {}

std::vector<const GpuThunk*> ConditionalThunk::nested() const {
  std::vector<const GpuThunk*> out;
  for (const ThunkSequence& b : branches_) {
    std::vector<const GpuThunk*> p = Pointers(b);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

Status ConditionalThunk::Initialize(const ThunkInitParams& params) {
  for (ThunkSequence& b : branches_) KILN_RETURN_IF_ERROR(b.Initialize(params));
  if (host_.get().is_null()) {
    KILN_ASSIGN_OR_RETURN(host_, PinnedBytes(params, 64));
  }
  return OkStatus();
}

Status ConditionalThunk::Execute(const ThunkExecuteParams& params) const {
  runtime::DeviceMemory index = params.buffers->Get(index_);
  if (index.is_null()) return Internal("conditional %", name(), " has no index buffer");
  const uint64_t bytes = index_type_ == PrimitiveType::kPred ? 1 : 4;
  KILN_RETURN_IF_ERROR(params.stream->MemcpyDeviceToHost(host_.get().ptr, index, bytes));
  KILN_RETURN_IF_ERROR(params.stream->Synchronize());
  const int64_t n = static_cast<int64_t>(branches_.size());
  const int64_t branch = SelectConditionalBranch(index_type_, static_cast<const uint8_t*>(host_.get().ptr), n);
  if (branch < 0 || branch >= n) return Internal("conditional %", name(), " has no branch ", branch);
  KILN_RETURN_IF_ERROR(branches_[branch].Execute(params));
  for (const Copy& c : result_copies_[branch]) KILN_RETURN_IF_ERROR(CopySlice(params, c.src, c.dst));
  return OkStatus();
}

// ---- HostThunk ----

namespace {

// The sub-literal of `l` at tuple index `index`.
Literal* LeafOf(Literal& l, const ShapeIndex& index) {
  Literal* x = &l;
  for (int64_t i : index) x = &x->mutable_tuple_element(i);
  return x;
}

}  // namespace

HostThunk::HostThunk(std::string name, std::unique_ptr<HloModule> module, std::vector<Shape> operand_shapes,
                     std::vector<std::vector<BufferSlice>> operands, std::vector<BufferSlice> outputs, std::string what)
    : GpuThunk(Kind::kHost, std::move(name)),
      module_(std::move(module)),
      operand_shapes_(std::move(operand_shapes)),
      operands_(std::move(operands)),
      outputs_(std::move(outputs)),
      what_(std::move(what)) {}

std::string HostThunk::ToString() const { return StrCat("host %", name(), " (", what_, " on the evaluator)"); }

StatusOr<std::unique_ptr<HostThunk>> HostThunk::Create(const HloInstruction& instr,
                                                       std::vector<std::vector<BufferSlice>> operands,
                                                       std::vector<BufferSlice> outputs) {
  auto module = std::make_unique<HloModule>(StrCat("host_", instr.name()));
  auto entry = std::make_unique<HloComputation>("entry");
  std::vector<HloInstruction*> params;
  std::vector<Shape> shapes;
  for (int64_t i = 0; i < instr.operand_count(); ++i) {
    Shape s = instr.operand(i)->shape();
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, s, StrCat("p", i));
    p->set_parameter_number(i);
    params.push_back(entry->AddInstruction(std::move(p)));
    shapes.push_back(s);
  }
  HloInstruction* clone = entry->AddInstruction(CloneInstruction(instr, instr.shape(), params, instr.name()));
  entry->set_root_instruction(clone);
  HloComputation* e = module->AddComputation(std::move(entry), /*is_entry=*/true);
  if (IsGemmCall(instr) || IsConvCall(instr)) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * v, ExpandLibraryCall(clone));
    e->set_root_instruction(v);
  }
  std::string what(HloOpcodeString(instr.opcode()));
  if (instr.opcode() == HloOpcode::kCustomCall) what = StrCat("custom-call ", instr.attrs().custom_call_target);
  return std::unique_ptr<HostThunk>(new HostThunk(instr.name(), std::move(module), std::move(shapes),
                                                  std::move(operands), std::move(outputs), std::move(what)));
}

Status HostThunk::Execute(const ThunkExecuteParams& params) const {
  runtime::Stream& stream = *params.stream;
  std::vector<Literal> args;
  for (size_t i = 0; i < operand_shapes_.size(); ++i) {
    Literal arg(operand_shapes_[i]);
    std::vector<ShapeIndex> leaves = ArrayLeafIndices(operand_shapes_[i]);
    if (leaves.size() != operands_[i].size()) return Internal("host %", name(), ": operand ", i, " leaf count");
    for (size_t j = 0; j < leaves.size(); ++j) {
      Literal* leaf = LeafOf(arg, leaves[j]);
      if (leaf->size_bytes() == 0) continue;
      KILN_RETURN_IF_ERROR(
          stream.MemcpyDeviceToHost(leaf->untyped_data(), params.buffers->Get(operands_[i][j]), leaf->size_bytes()));
    }
    args.push_back(std::move(arg));
  }
  KILN_RETURN_IF_ERROR(stream.Synchronize());
  EvaluatorOptions eo;
  eo.max_loop_iterations = -1;
  if (params.rng_state) eo.rng_seed = *params.rng_state;
  Evaluator evaluator(eo);
  KILN_ASSIGN_OR_RETURN(Literal result, evaluator.Run(*module_, args));
  if (params.rng_state) *params.rng_state = evaluator.rng_state();
  std::vector<ShapeIndex> leaves = ArrayLeafIndices(result.shape());
  if (leaves.size() != outputs_.size()) return Internal("host %", name(), ": result leaf count");
  for (size_t j = 0; j < leaves.size(); ++j) {
    const Literal* leaf = LeafOf(result, leaves[j]);
    if (leaf->size_bytes() == 0) continue;
    runtime::DeviceMemory dst = params.buffers->Get(outputs_[j]);
    if (dst.size < leaf->size_bytes()) return Internal("host %", name(), ": output ", j, " buffer too small");
    KILN_RETURN_IF_ERROR(stream.MemcpyHostToDevice(dst, leaf->untyped_data(), leaf->size_bytes()));
  }
  return stream.Synchronize();
}

}  // namespace kiln::cuda
