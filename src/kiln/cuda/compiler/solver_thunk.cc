#include "kiln/cuda/compiler/solver_thunk.h"

#include <optional>
#include <string_view>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/eval/lapack_internal.h"  // BackendInt: the FFI backend_config reader

namespace kiln::cuda {

namespace {

using libs::SolverOp;
using libs::SvdLayout;

enum class Svd { kNone, kLapack, kGesvd, kGesvdj };

struct TargetInfo {
  SolverOp op;
  bool lapack = false;
  Svd svd = Svd::kNone;
};

// Note [Solver custom calls]: the op of a target name, or nullopt.
std::optional<TargetInfo> ParseTarget(std::string_view t) {
  if (t.starts_with("lapack_") && t.ends_with("_ffi") && t.size() > 12) {
    const char p = t[7];
    if (p != 's' && p != 'd' && p != 'c' && p != 'z') return std::nullopt;
    const std::string_view name = t.substr(8, t.size() - 12);
    if (name == "potrf") return TargetInfo{SolverOp::kPotrf, true};
    if (name == "getrf") return TargetInfo{SolverOp::kGetrf, true};
    if (name == "trsm") return TargetInfo{SolverOp::kTrsm, true};
    if (name == "geqrf") return TargetInfo{SolverOp::kGeqrf, true};
    if (name == "orgqr" || name == "ungqr") return TargetInfo{SolverOp::kOrgqr, true};
    if (name == "syevd" || name == "heevd") return TargetInfo{SolverOp::kSyevd, true};
    if (name == "sytrd" || name == "hetrd") return TargetInfo{SolverOp::kSytrd, true};
    if (name == "gesdd" || name == "gesvd") return TargetInfo{SolverOp::kGesvd, true, Svd::kLapack};
    if (name == "gtsv") return TargetInfo{SolverOp::kGtsv, true};
    return std::nullopt;
  }
  std::string_view u;
  if (t.starts_with("hip")) u = t.substr(3);
  else if (t.starts_with("cu")) u = t.substr(2);
  else return std::nullopt;
  if (u == "solver_potrf_ffi") return TargetInfo{SolverOp::kPotrf};
  if (u == "solver_getrf_ffi") return TargetInfo{SolverOp::kGetrf};
  if (u == "solver_geqrf_ffi") return TargetInfo{SolverOp::kGeqrf};
  if (u == "solver_orgqr_ffi") return TargetInfo{SolverOp::kOrgqr};
  if (u == "solver_syevd_ffi") return TargetInfo{SolverOp::kSyevd};
  if (u == "solver_sytrd_ffi") return TargetInfo{SolverOp::kSytrd};
  if (u == "solver_gesvd_ffi") return TargetInfo{SolverOp::kGesvd, false, Svd::kGesvd};
  if (u == "solver_gesvdj_ffi") return TargetInfo{SolverOp::kGesvdj, false, Svd::kGesvdj};
  if (u == "solver_syrk_ffi") return TargetInfo{SolverOp::kSyrk};
  if (u == "_lu_pivots_to_permutation") return TargetInfo{SolverOp::kPivotsToPermutation};
  if (u == "_cholesky_update_ffi") return TargetInfo{SolverOp::kCholeskyUpdate};
  if (u == "sparse_gtsv2_ffi") return TargetInfo{SolverOp::kGtsv};
  return std::nullopt;
}

struct Mat {
  int64_t batch = 1, rows = 0, cols = 0;
};
std::optional<Mat> MatOf(const Shape& s) {
  if (!s.IsArray() || s.rank() < 2) return std::nullopt;
  Mat m;
  m.rows = s.dimensions(s.rank() - 2);
  m.cols = s.dimensions(s.rank() - 1);
  for (int64_t i = 0; i + 2 < s.rank(); ++i) m.batch *= s.dimensions(i);
  return m;
}

PrimitiveType RealOf(PrimitiveType t) {
  if (t == PrimitiveType::kC64) return PrimitiveType::kF32;
  if (t == PrimitiveType::kC128) return PrimitiveType::kF64;
  return t;
}

// The element types of the op's inputs and outputs (libs/solver.h's contracts).
std::vector<PrimitiveType> InputTypes(const libs::SolverDesc& d) {
  const PrimitiveType t = d.type;
  switch (d.op) {
    case SolverOp::kOrgqr: case SolverOp::kTrsm: case SolverOp::kCholeskyUpdate: return {t, t};
    case SolverOp::kSyrk: case SolverOp::kGtsv: return {t, t, t, t};
    default: return {t};
  }
}
std::vector<PrimitiveType> OutputTypes(const libs::SolverDesc& d) {
  const PrimitiveType t = d.type, r = RealOf(t), i = PrimitiveType::kS32;
  switch (d.op) {
    case SolverOp::kPotrf: return {t, i};
    case SolverOp::kGetrf: return {t, i, i};
    case SolverOp::kGeqrf: return {t, t};
    case SolverOp::kSyevd: return {t, r, i};
    case SolverOp::kSytrd: return {t, r, r, t, i};
    case SolverOp::kGesvd: case SolverOp::kGesvdj: return {t, r, t, t, i};
    case SolverOp::kCholeskyUpdate: return {t, t};
    case SolverOp::kGtsv:
      if (d.gtsv_lapack) return {t, t, t, t, i};
      return {t};
    default: return {t};
  }
}

}  // namespace

bool IsSolverCall(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kCustomCall && ParseTarget(instr.attrs().custom_call_target).has_value();
}

StatusOr<libs::SolverDesc> SolverDescForCall(const HloInstruction& instr) {
  const std::string& target = instr.attrs().custom_call_target;
  std::optional<TargetInfo> info = ParseTarget(target);
  if (!info || instr.opcode() != HloOpcode::kCustomCall)
    return InvalidArgument("%", instr.name(), " is not a solver call");
  const std::string where = StrCat(target, " %", instr.name());
  auto unsupported = [&](auto&&... why) { return Unimplemented(where, ": ", why...); };
  for (const HloInstruction* o : instr.operands())
    if (!o->shape().IsArray()) return unsupported("an operand that is not an array");
  libs::SolverDesc d;
  d.op = info->op;
  if (instr.operand_count() < 1) return unsupported("no operands");
  d.type = instr.operand(0)->shape().element_type();
  d.gtsv_lapack = d.op == SolverOp::kGtsv && info->lapack;
  auto flag = [&](std::string_view key, int fallback) { return eval_internal::BackendInt(instr, key, fallback); };
  auto lower = [&] { return info->lapack ? flag("uplo", 'L') == 'L' : flag("lower", 1) != 0; };
  const int64_t want_inputs = libs::SolverInputCount(d);
  if (instr.operand_count() != want_inputs) return unsupported("takes ", want_inputs, " operands");
  switch (d.op) {
    case SolverOp::kPivotsToPermutation: {
      const Shape& p = instr.operand(0)->shape();
      const Shape& r = instr.shape();
      if (p.rank() < 1 || !r.IsArray() || r.rank() != p.rank()) return unsupported("pivots and permutation ranks");
      for (int64_t i = 0; i + 1 < p.rank(); ++i) {
        if (p.dimensions(i) != r.dimensions(i)) return unsupported("batch sizes differ");
        d.batch *= p.dimensions(i);
      }
      d.k = p.dimensions(p.rank() - 1);
      d.m = r.dimensions(r.rank() - 1);
      d.n = 1;
      break;
    }
    case SolverOp::kCholeskyUpdate: {
      std::optional<Mat> r = MatOf(instr.operand(0)->shape());
      if (!r) return unsupported("r is not a matrix");
      d.batch = r->batch;
      d.m = r->rows;
      d.n = r->cols;
      break;
    }
    case SolverOp::kGtsv: {
      // (dl, d, du, b): b [batch..., m, nrhs], the diagonals [batch..., m] each.
      std::optional<Mat> b = MatOf(instr.operand(3)->shape());
      if (!b) return unsupported("b is not a matrix");
      d.batch = b->batch;
      d.m = b->rows;
      d.n = b->cols;
      break;
    }
    case SolverOp::kTrsm: {
      std::optional<Mat> a = MatOf(instr.operand(0)->shape()), b = MatOf(instr.operand(1)->shape());
      if (!a || !b) return unsupported("operands are not matrices");
      if (a->rows != a->cols) return unsupported("a is not square");
      if (a->batch != b->batch) return unsupported("a's batch does not fit b's");
      d.batch = b->batch;
      d.m = b->rows;
      d.n = b->cols;
      d.k = a->rows;
      d.left_side = flag("side", 'L') == 'L';
      d.lower = flag("uplo", 'L') == 'L';
      d.unit_diagonal = flag("diag", 'N') == 'U';
      const int trans = flag("trans_x", 'N');
      d.transpose = trans == 'T' ? 1 : trans == 'C' ? 2 : 0;
      break;
    }
    case SolverOp::kSyrk: {
      std::optional<Mat> a = MatOf(instr.operand(0)->shape()), c = MatOf(instr.operand(1)->shape());
      if (!a || !c) return unsupported("a and c must be matrices");
      d.syrk_transpose = flag("transpose", 0) != 0;
      d.batch = c->batch;
      d.m = c->rows;
      d.n = c->cols;
      const int64_t an = d.syrk_transpose ? a->cols : a->rows;
      d.k = d.syrk_transpose ? a->rows : a->cols;
      if (an != d.n || a->batch != c->batch) return unsupported("a does not fit c");
      if (instr.operand(2)->shape().num_elements() != 1 || instr.operand(3)->shape().num_elements() != 1)
        return unsupported("alpha and beta must be scalars");
      break;
    }
    default: {
      std::optional<Mat> a = MatOf(instr.operand(0)->shape());
      if (!a) return unsupported("the operand is not a (batched) matrix");
      d.batch = a->batch;
      d.m = a->rows;
      d.n = a->cols;
      if (d.op == SolverOp::kOrgqr) {
        const Shape& tau = instr.operand(1)->shape();
        d.k = tau.rank() >= 1 ? tau.dimensions(tau.rank() - 1) : 0;
      }
      if (d.op == SolverOp::kPotrf || d.op == SolverOp::kSyevd || d.op == SolverOp::kSytrd) d.lower = lower();
      if (d.op == SolverOp::kGesvd || d.op == SolverOp::kGesvdj) {
        if (!instr.shape().IsTuple() || instr.shape().tuple_shapes_size() != 5) return unsupported("needs 5 results");
        std::optional<Mat> x = MatOf(instr.shape().tuple_shapes(2)), y = MatOf(instr.shape().tuple_shapes(3));
        if (!x || !y) return unsupported("u and v results must be matrices");
        d.x_rows = x->rows;
        d.x_cols = x->cols;
        d.y_rows = y->rows;
        d.y_cols = y->cols;
        switch (info->svd) {
          case Svd::kLapack:
            d.compute_uv = flag("mode", 'A') != 'N';
            d.svd_layout = SvdLayout::kUVt;
            break;
          case Svd::kGesvd:
            d.compute_uv = flag("compute_uv", 1) != 0;
            d.svd_layout = flag("transposed", 0) != 0 ? SvdLayout::kVtU : SvdLayout::kUVt;
            break;
          default:
            d.compute_uv = flag("compute_uv", 1) != 0;
            d.svd_layout = SvdLayout::kUV;
            break;
        }
      }
      break;
    }
  }
  KILN_RETURN_IF_ERROR(libs::ValidateSolverDesc(d).WithContext(where));
  // Every operand and result must have the type and size the contract says.
  const std::vector<PrimitiveType> in_types = InputTypes(d), out_types = OutputTypes(d);
  for (int64_t i = 0; i < want_inputs; ++i) {
    const Shape& s = instr.operand(i)->shape();
    const uint64_t bytes = static_cast<uint64_t>(s.num_elements()) * PrimitiveByteWidth(s.element_type());
    if (s.element_type() != in_types[i] || bytes != libs::SolverInputBytes(d, i))
      return unsupported("operand ", i, " ", s.ToString(), " does not fit ", d.ToString());
  }
  const int64_t want_outputs = libs::SolverOutputCount(d);
  const Shape& r = instr.shape();
  const bool tuple = r.IsTuple();
  if ((tuple ? r.tuple_shapes_size() : 1) != want_outputs) return unsupported("needs ", want_outputs, " results");
  for (int64_t i = 0; i < want_outputs; ++i) {
    const Shape& s = tuple ? r.tuple_shapes(i) : r;
    if (!s.IsArray()) return unsupported("result ", i, " is not an array");
    const uint64_t bytes = static_cast<uint64_t>(s.num_elements()) * PrimitiveByteWidth(s.element_type());
    if (s.element_type() != out_types[i] || bytes != libs::SolverOutputBytes(d, i))
      return unsupported("result ", i, " ", s.ToString(), " does not fit ", d.ToString());
  }
  return d;
}

SolverThunk::SolverThunk(std::string name, libs::SolverDesc desc, std::vector<BufferSlice> inputs,
                         std::vector<BufferSlice> outputs, std::unique_ptr<GpuThunk> fallback)
    : GpuThunk(Kind::kSolver, std::move(name),
               [&] {
                 int64_t b = 0;
                 for (const BufferSlice& s : inputs) b += s.size;
                 for (const BufferSlice& s : outputs) b += s.size;
                 return b;
               }()),
      desc_(std::move(desc)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      fallback_(std::move(fallback)) {}

std::string SolverThunk::ToString() const {
  return StrCat("solver %", name(), " ", desc_.ToString(), use_fallback_ ? " [host fallback]" : "");
}

Status SolverThunk::Initialize(const ThunkInitParams& params) {
  if (plan_) return OkStatus();
  if (use_fallback_) return fallback_->Initialize(params);
  if (params.device == nullptr || params.stream == nullptr)
    return InvalidArgument("solver %", name(), ": no device or stream to initialize on");
  StatusOr<std::unique_ptr<libs::SolverPlan>> plan = libs::SolverPlan::Create(desc_, *params.device, *params.stream);
  if (plan.ok()) {
    plan_ = std::move(*plan);
    return OkStatus();
  }
  const StatusCode code = plan.status().code();
  const bool declined = code == StatusCode::kNotFound || code == StatusCode::kUnimplemented ||
                        code == StatusCode::kInvalidArgument;
  if (!declined || !fallback_) return plan.status();
  KILN_LOG(Warning) << "solver %" << name() << " runs on the host: " << plan.status().message();
  use_fallback_ = true;
  return fallback_->Initialize(params);
}

uint64_t SolverThunk::workspace_bytes() const {
  if (use_fallback_) return fallback_->workspace_bytes();
  return plan_ ? plan_->workspace_bytes() : 0;
}

Status SolverThunk::Execute(const ThunkExecuteParams& params) const {
  if (use_fallback_) return fallback_->Execute(params);
  if (!plan_) return FailedPrecondition("solver %", name(), " is not initialized");
  std::vector<runtime::DeviceMemory> in, out;
  for (const BufferSlice& s : inputs_) in.push_back(params.buffers->Get(s));
  for (const BufferSlice& s : outputs_) out.push_back(params.buffers->Get(s));
  runtime::DeviceMemory ws = params.workspace;
  if (ws.size > plan_->workspace_bytes()) ws.size = plan_->workspace_bytes();
  return plan_->Run(in, out, ws, *params.stream);
}

}  // namespace kiln::cuda
