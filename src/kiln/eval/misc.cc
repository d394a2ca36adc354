// Miscellaneous kernels: scan, batch-norm-training/-inference/-grad, custom-call; and the
// registration of the split-off misc files (rng.cc, fft.cc, linalg.cc, collectives.cc).
//
// scan (XLA's HloScanInstruction, as its ScanExpander defines it): operands are the inputs
//   followed by the initial carries; to_apply takes (input slices..., carries...) and returns
//   (output slices..., new carries...) (a single array when there is one value). Step i
//   (i = 0..L-1, or L-1..0 when is_reverse) slices the inputs at index i of the scan dimension
//   (which the slices drop) and writes the output slices at index i. The result is
//   (outputs..., final carries...), or the single array. An operand is an input when its rank is
//   one more than to_apply's matching parameter, a carry when the shapes match.
// batch-norm-*: as XLA's BatchNormExpander (statistics over every dimension but feature_index,
//   biased variance, computed in double and rounded once):
//   training(x, scale, offset) -> (y, mean, var), y = (x - mean) / sqrt(var + eps) * scale + offset
//   inference(x, scale, offset, mean, var) -> y
//   grad(x, scale, mean, var, dy) -> (dx, dscale, doffset):
//     doffset = sum(dy), dscale = sum(dy * (x - mean)) / sqrt(var + eps),
//     dx = scale / sqrt(var + eps) * (dy - doffset / N - (x - mean) * sum(dy*(x-mean)) / (N (var +
//     eps)))
// custom-call: annotation targets (Sharding, SPMDFullToShardShape, SPMDShardToFullShape,
//   annotate_device_placement, MoveToHost, MoveToDevice, LayoutConstraint, ...) are the
//   identity when the shapes allow it (one participant); TopK is sort.cc's; the linear-algebra
//   targets of JAX's CPU and GPU lowerings (LAPACK, cuSOLVER/hipSOLVER, gtsv, LU pivots) are
//   lapack*.cc's and gpu_solver.cc's (docs/evaluator.md lists them); anything else is
//   UnsupportedInstruction naming the target.
#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/dynamic_shapes.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/misc_internal.h"
#include "kiln/eval/sort_internal.h"
#include "kiln/hlo/computation.h"

namespace kiln {
namespace {

using eval_internal::ExpectArrayOperand;

// ---- scan ----

// Copies between `full` and its slice at `index` of dimension `dim` (the slice's dims are the
// full dims without `dim`): to_slice copies full -> slice, else slice -> full.
void CopySlice(Literal& full, Literal& slice, int64_t dim, int64_t index, bool to_slice) {
  const auto& dims = full.shape().dimensions();
  const int w = PrimitiveByteWidth(full.shape().element_type());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= dims[d];
  for (size_t d = dim + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t len = dims[dim];
  for (int64_t o = 0; o < outer; ++o) {
    uint8_t* f = full.untyped_data() + ((o * len) + index) * inner * w;
    uint8_t* s = slice.untyped_data() + o * inner * w;
    if (to_slice) {
      std::memcpy(s, f, inner * w);
    } else {
      std::memcpy(f, s, inner * w);
    }
  }
}

StatusOr<Literal> EvalScan(const HloInstruction& instr, std::span<const Literal* const> ops,
                           Evaluator& e) {
  const HloComputation* body = instr.to_apply();
  if (!body) return InvalidArgument("scan %", instr.name(), " has no to_apply");
  const int64_t nops = static_cast<int64_t>(ops.size());
  if (body->num_parameters() != nops)
    return InvalidArgument("scan %", instr.name(), ": to_apply takes ", body->num_parameters(),
                           " parameters for ", nops, " operands");
  const int64_t dim = instr.attrs().dimensions.size() == 1 ? instr.attrs().dimensions[0]
                                                           : instr.attrs().scan_dimension;
  int64_t ninputs = 0;
  while (ninputs < nops) {
    const Shape& os = ops[ninputs]->shape();
    const Shape& ps = body->parameter_instruction(ninputs)->shape();
    if (!os.IsArray() || !ps.IsArray() || os.rank() != ps.rank() + 1) break;
    ++ninputs;
  }
  const int64_t ncarries = nops - ninputs;
  for (int64_t i = ninputs; i < nops; ++i)
    if (!Shape::Compatible(ops[i]->shape(), body->parameter_instruction(i)->shape()))
      return InvalidArgument("scan %", instr.name(), ": operand ", i,
                             " is neither an input nor a carry of to_apply");
  const Shape& rs = instr.shape();
  const int64_t nresults = rs.IsTuple() ? rs.tuple_shapes_size() : 1;
  const int64_t noutputs = nresults - ncarries;
  if (noutputs < 0)
    return InvalidArgument("scan %", instr.name(), ": result has fewer values than carries");
  auto result_shape = [&](int64_t i) -> const Shape& {
    return rs.IsTuple() ? rs.tuple_shapes(i) : rs;
  };
  int64_t length = -1;
  for (int64_t i = 0; i < ninputs; ++i) {
    const Shape& s = ops[i]->shape();
    if (dim < 0 || dim >= s.rank())
      return InvalidArgument("scan %", instr.name(), ": scan dimension ", dim, " out of range");
    if (length >= 0 && s.dimensions(dim) != length)
      return InvalidArgument("scan %", instr.name(), ": inputs differ in scan length");
    length = s.dimensions(dim);
  }
  for (int64_t i = 0; i < noutputs; ++i) {
    const Shape& s = result_shape(i);
    if (!s.IsArray() || dim < 0 || dim >= s.rank())
      return InvalidArgument("scan %", instr.name(), ": output ", i, " lacks the scan dimension");
    if (length < 0) length = s.dimensions(dim);
    if (s.dimensions(dim) != length)
      return InvalidArgument("scan %", instr.name(), ": output ", i, " has the wrong scan length");
  }
  if (length < 0) length = 0;

  std::vector<Literal> outputs;
  for (int64_t i = 0; i < noutputs; ++i) outputs.emplace_back(result_shape(i));
  std::vector<Literal> carries;
  for (int64_t i = ninputs; i < nops; ++i) carries.push_back(*ops[i]);
  std::vector<Literal> inputs, slices;
  for (int64_t i = 0; i < ninputs; ++i) {
    inputs.push_back(*ops[i]);
    slices.emplace_back(body->parameter_instruction(i)->shape());
  }
  std::vector<const Literal*> args(nops);
  for (int64_t step = 0; step < length; ++step) {
    const int64_t idx = instr.attrs().is_reverse ? length - 1 - step : step;
    for (int64_t i = 0; i < ninputs; ++i) {
      CopySlice(inputs[i], slices[i], dim, idx, /*to_slice=*/true);
      args[i] = &slices[i];
    }
    for (int64_t i = 0; i < ncarries; ++i) args[ninputs + i] = &carries[i];
    KILN_ASSIGN_OR_RETURN(Literal r, e.Evaluate(*body, args));
    std::vector<Literal> values;
    if (r.shape().IsTuple()) {
      values = r.DecomposeTuple();
    } else {
      values.push_back(std::move(r));
    }
    if (static_cast<int64_t>(values.size()) != nresults)
      return InvalidArgument("scan %", instr.name(), ": to_apply returned ", values.size(),
                             " values, expected ", nresults);
    for (int64_t i = 0; i < noutputs; ++i) {
      const Literal& v = values[i];
      if (!v.shape().IsArray() ||
          v.element_count() * (length ? length : 1) != outputs[i].element_count() ||
          v.shape().element_type() != outputs[i].shape().element_type())
        return InvalidArgument("scan %", instr.name(), ": output slice ", i, " has shape ",
                               v.shape().ToString(false));
      CopySlice(outputs[i], values[i], dim, idx, /*to_slice=*/false);
    }
    for (int64_t i = 0; i < ncarries; ++i) carries[i] = std::move(values[noutputs + i]);
  }
  std::vector<Literal> all = std::move(outputs);
  for (Literal& c : carries) all.push_back(std::move(c));
  if (!rs.IsTuple()) return std::move(all[0]);
  return Literal::MakeTuple(std::move(all));
}

// ---- batch norm ----

// Element (o, f, i) of the operand viewed as [outer][features][inner] is at (o*F + f)*inner + i.
struct FeatureLayout {
  int64_t outer = 1, features = 0, inner = 1, count = 0;  // count: elements per feature
  // Calls fn(linear index, feature) for every element, in order.
  template <typename Fn>
  void ForEach(Fn fn) const {
    int64_t idx = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t f = 0; f < features; ++f)
        for (int64_t i = 0; i < inner; ++i, ++idx) fn(idx, f);
  }
};

StatusOr<FeatureLayout> LayoutFor(const HloInstruction& instr, const Literal& x) {
  const Shape& s = x.shape();
  const int64_t fi = instr.attrs().feature_index;
  if (fi < 0 || fi >= s.rank())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": feature_index ",
                           fi, " out of range for ", s.ToString(false));
  FeatureLayout l;
  l.features = s.dimensions(fi);
  for (int64_t d = 0; d < fi; ++d) l.outer *= s.dimensions(d);
  for (int64_t d = fi + 1; d < s.rank(); ++d) l.inner *= s.dimensions(d);
  l.count = l.features ? s.num_elements() / l.features : 0;
  return l;
}

Status CheckFeatureVector(const HloInstruction& instr, const Literal& v, int64_t features,
                          int64_t operand) {
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, v, operand, 1));
  if (v.shape().dimensions(0) != features)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ",
                           operand, " has ", v.shape().dimensions(0), " entries, expected ",
                           features);
  return OkStatus();
}

Literal StoreAs(const Shape& shape, const std::vector<double>& v) {
  Literal l(shape);
  eval_internal::StoreDoubles(v, l);
  return l;
}

const Shape& TupleOrSelf(const Shape& s, int64_t i) { return s.IsTuple() ? s.tuple_shapes(i) : s; }

StatusOr<Literal> EvalBatchNormTraining(const HloInstruction& instr,
                                        std::span<const Literal* const> ops, Evaluator&) {
  if (ops.size() != 3)
    return InvalidArgument("batch-norm-training %", instr.name(), " takes 3 operands");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  KILN_ASSIGN_OR_RETURN(FeatureLayout fl, LayoutFor(instr, *ops[0]));
  KILN_RETURN_IF_ERROR(CheckFeatureVector(instr, *ops[1], fl.features, 1));
  KILN_RETURN_IF_ERROR(CheckFeatureVector(instr, *ops[2], fl.features, 2));
  const Shape& rs = instr.shape();
  if (!rs.IsTuple() || rs.tuple_shapes_size() != 3)
    return InvalidArgument("batch-norm-training %", instr.name(), " returns (output, mean, var)");
  std::vector<double> x = eval_internal::LiteralToDoubles(*ops[0]);
  std::vector<double> scale = eval_internal::LiteralToDoubles(*ops[1]);
  std::vector<double> offset = eval_internal::LiteralToDoubles(*ops[2]);
  const double eps = instr.attrs().epsilon;
  std::vector<double> mean(fl.features, 0.0), var(fl.features, 0.0);
  fl.ForEach([&](int64_t i, int64_t f) { mean[f] += x[i]; });
  for (double& m : mean) m /= static_cast<double>(fl.count);
  fl.ForEach([&](int64_t i, int64_t f) {
    const double d = x[i] - mean[f];
    var[f] += d * d;
  });
  for (double& v : var) v /= static_cast<double>(fl.count);
  std::vector<double> y(x.size());
  fl.ForEach([&](int64_t i, int64_t f) {
    y[i] = (x[i] - mean[f]) / std::sqrt(var[f] + eps) * scale[f] + offset[f];
  });
  std::vector<Literal> parts;
  parts.push_back(StoreAs(rs.tuple_shapes(0), y));
  parts.push_back(StoreAs(rs.tuple_shapes(1), mean));
  parts.push_back(StoreAs(rs.tuple_shapes(2), var));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalBatchNormInference(const HloInstruction& instr,
                                         std::span<const Literal* const> ops, Evaluator&) {
  if (ops.size() != 5)
    return InvalidArgument("batch-norm-inference %", instr.name(), " takes 5 operands");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  KILN_ASSIGN_OR_RETURN(FeatureLayout fl, LayoutFor(instr, *ops[0]));
  for (int64_t i = 1; i < 5; ++i)
    KILN_RETURN_IF_ERROR(CheckFeatureVector(instr, *ops[i], fl.features, i));
  std::vector<double> x = eval_internal::LiteralToDoubles(*ops[0]);
  std::vector<double> scale = eval_internal::LiteralToDoubles(*ops[1]);
  std::vector<double> offset = eval_internal::LiteralToDoubles(*ops[2]);
  std::vector<double> mean = eval_internal::LiteralToDoubles(*ops[3]);
  std::vector<double> var = eval_internal::LiteralToDoubles(*ops[4]);
  const double eps = instr.attrs().epsilon;
  std::vector<double> y(x.size());
  fl.ForEach([&](int64_t i, int64_t f) {
    y[i] = (x[i] - mean[f]) / std::sqrt(var[f] + eps) * scale[f] + offset[f];
  });
  return StoreAs(TupleOrSelf(instr.shape(), 0), y);
}

StatusOr<Literal> EvalBatchNormGrad(const HloInstruction& instr,
                                    std::span<const Literal* const> ops, Evaluator&) {
  if (ops.size() != 5)
    return InvalidArgument("batch-norm-grad %", instr.name(), " takes 5 operands");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[4], 4));
  if (ops[4]->shape().dimensions() != ops[0]->shape().dimensions())
    return InvalidArgument("batch-norm-grad %", instr.name(), ": grad_output differs from operand");
  KILN_ASSIGN_OR_RETURN(FeatureLayout fl, LayoutFor(instr, *ops[0]));
  for (int64_t i = 1; i < 4; ++i)
    KILN_RETURN_IF_ERROR(CheckFeatureVector(instr, *ops[i], fl.features, i));
  const Shape& rs = instr.shape();
  if (!rs.IsTuple() || rs.tuple_shapes_size() != 3)
    return InvalidArgument("batch-norm-grad %", instr.name(),
                           " returns (grad_operand, grad_scale, grad_offset)");
  std::vector<double> x = eval_internal::LiteralToDoubles(*ops[0]);
  std::vector<double> scale = eval_internal::LiteralToDoubles(*ops[1]);
  std::vector<double> mean = eval_internal::LiteralToDoubles(*ops[2]);
  std::vector<double> var = eval_internal::LiteralToDoubles(*ops[3]);
  std::vector<double> dy = eval_internal::LiteralToDoubles(*ops[4]);
  const double eps = instr.attrs().epsilon;
  const double n = static_cast<double>(fl.count);
  std::vector<double> sum_dy(fl.features, 0.0), sum_dy_xc(fl.features, 0.0);
  fl.ForEach([&](int64_t i, int64_t f) {
    sum_dy[f] += dy[i];
    sum_dy_xc[f] += dy[i] * (x[i] - mean[f]);
  });
  std::vector<double> dscale(fl.features), dx(x.size());
  for (int64_t f = 0; f < fl.features; ++f) dscale[f] = sum_dy_xc[f] / std::sqrt(var[f] + eps);
  fl.ForEach([&](int64_t i, int64_t f) {
    const double ve = var[f] + eps;
    dx[i] = scale[f] / std::sqrt(ve) *
            (dy[i] - sum_dy[f] / n - (x[i] - mean[f]) * sum_dy_xc[f] / (n * ve));
  });
  std::vector<Literal> parts;
  parts.push_back(StoreAs(rs.tuple_shapes(0), dx));
  parts.push_back(StoreAs(rs.tuple_shapes(1), dscale));
  parts.push_back(StoreAs(rs.tuple_shapes(2), sum_dy));
  return Literal::MakeTuple(std::move(parts));
}

// ---- custom-call ----

bool IsAnnotationTarget(std::string_view t) {
  static constexpr std::string_view kTargets[] = {
      "Sharding",      "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
      "MoveToHost",    "MoveToDevice",         "LayoutConstraint",     "ShardBarrierFrom",
      "ShardBarrierTo"};
  for (std::string_view k : kTargets)
    if (k == t) return true;
  return false;
}

// PartialReduce is the TPU's approximate top-k step (jax.lax.approx_max_k lowered for TPU):
// which elements land in which output bin is defined only by XLA's TPU backend, so no other
// implementation can match it.
constexpr std::string_view kPartialReduceUnsupported =
    "PartialReduce is the TPU's approximate top-k reduction, whose output bins only XLA's TPU "
    "backend defines; lower the module for cpu or gpu (approx_max_k becomes ApproxTopK / an exact "
    "top-k there)";

StatusOr<Literal> EvalCustomCall(const HloInstruction& instr, std::span<const Literal* const> ops,
                                 Evaluator& e) {
  const std::string& target = instr.attrs().custom_call_target;
  if (target == "TopK") return eval_internal::EvalTopKCustomCall(instr, ops, e);
  // Fused attention (passes/attention_rewriter.h): its value is its outlined computation's.
  if (target == "__kiln$attention" || target == "__kiln$attention_backward") {
    if (instr.called_computations().size() != 1)
      return InvalidArgument("attention call %", instr.name(), " has no outlined computation");
    return e.Evaluate(*instr.called_computations()[0], ops);
  }
  if (std::optional<StatusOr<Literal>> r = eval_internal::EvalLapackCustomCall(instr, ops))
    return std::move(*r);
  if (std::optional<StatusOr<Literal>> r = eval_internal::EvalDynamicShapeCustomCall(instr, ops, e))
    return std::move(*r);
  if (target == "PartialReduce")
    return UnsupportedInstruction(instr, kPartialReduceUnsupported);
  if (target == "GetRngSeed") {
    // The run's RNG state (its seed, unless rng ops ran before), as an integer scalar: XLA's
    // custom call for a program that seeds its own generator. Not advanced.
    if (!ops.empty() || !instr.shape().IsArray() || instr.shape().rank() != 0 ||
        !IsIntegralType(instr.shape().element_type()))
      return InvalidArgument("custom-call GetRngSeed %", instr.name(),
                             " takes no operands and returns an integer scalar");
    Literal out(instr.shape());
    out.SetFromInt64(0, static_cast<int64_t>(e.rng_state()));
    return out;
  }
  if (IsAnnotationTarget(target)) {
    if (ops.size() == 1 && Shape::Compatible(ops[0]->shape(), instr.shape())) return *ops[0];
    return UnsupportedInstruction(
        instr, StrCat("annotation custom call changing the shape (",
                      ops.empty() ? std::string("no operand") : ops[0]->shape().ToString(false),
                      " -> ", instr.shape().ToString(false), "): more than one partition"));
  }
  return UnsupportedInstruction(instr);
}

}  // namespace

void RegisterMiscKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kScan, EvalScan);
  r.Register(HloOpcode::kBatchNormTraining, EvalBatchNormTraining);
  r.Register(HloOpcode::kBatchNormInference, EvalBatchNormInference);
  r.Register(HloOpcode::kBatchNormGrad, EvalBatchNormGrad);
  r.Register(HloOpcode::kCustomCall, EvalCustomCall);
  eval_internal::RegisterRngKernels(r);
  eval_internal::RegisterFftKernels(r);
  eval_internal::RegisterLinalgKernels(r);
  eval_internal::RegisterCollectiveKernels(r);
}

}  // namespace kiln
