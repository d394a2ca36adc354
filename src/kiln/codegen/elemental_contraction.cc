// Dot and convolution as elemental values (docs/codegen.md, "Contractions"): each output
// element loops over its contraction (a dot's contracting dimensions; a convolution's input
// features of its group and its kernel window), so the loop emitter runs the dots and
// convolutions the vendor libraries do not take (integer, mixed-type, complex convolutions...).
//
// Accumulation follows the evaluator (eval/dot_conv.cc) so results are bit-exact where it is
// exact:
//   - integer results: operands widened (floats converted to the result type, saturating),
//     products summed with wraparound in 32 bits (results of at most 32 bits: the low bits of
//     the evaluator's 64-bit sum) or 64 bits, then wrapped to the result type;
//   - pred results: the 64-bit sum of products of 0/1 values, != 0 (an OR of ANDs);
//   - real results: operands converted exactly to double, summed in double, rounded once;
//   - complex results: the same in complex double.
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/elemental_ops.h"

namespace kiln::codegen {

namespace {

// The register type the products of a contraction with result type `t` are summed in.
PrimitiveType AccumulationType(PrimitiveType t) {
  if (IsComplexType(t)) return PrimitiveType::kC128;
  if (t == PrimitiveType::kPred) return PrimitiveType::kU64;
  if (IsIntegralType(t)) return PrimitiveBitWidth(t) <= 32 ? PrimitiveType::kU32 : PrimitiveType::kU64;
  return PrimitiveType::kF64;
}

// `v` as a term of the accumulation type `acc` for result type `result`.
StatusOr<std::string> ToAccumulation(const Value& v, PrimitiveType acc, PrimitiveType result) {
  if (acc == PrimitiveType::kC128 || acc == PrimitiveType::kF64)
    return ElementalOps::Convert(v.type, acc, v.expr);
  if (IsIntegralType(v.type) || v.type == PrimitiveType::kPred)
    return "((" + RegisterType(acc) + ")(" + v.expr + "))";
  // A float (or complex: its real part) into an integer result: XLA's saturating convert.
  const PrimitiveType to = result == PrimitiveType::kPred ? PrimitiveType::kS64 : result;
  KILN_ASSIGN_OR_RETURN(std::string c, ElementalOps::Convert(v.type, to, v.expr));
  return "((" + RegisterType(acc) + ")(" + c + "))";
}

// acc += a * b in the accumulation type.
StatusOr<std::string> MacLine(const std::string& acc, PrimitiveType acc_t, const Value& a, const Value& b,
                              PrimitiveType result) {
  KILN_ASSIGN_OR_RETURN(std::string x, ToAccumulation(a, acc_t, result));
  KILN_ASSIGN_OR_RETURN(std::string y, ToAccumulation(b, acc_t, result));
  if (acc_t == PrimitiveType::kC128) return acc + " = kiln_cadd(" + acc + ", kiln_cmul(" + x + ", " + y + "));";
  return acc + " = " + acc + " + " + x + " * " + y + ";";
}

bool Contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

StatusOr<std::vector<Value>> ElementalEmitter::EmitDot(const HloInstruction& instr, const Index& index) {
  if (!instr.attrs().sparsity.empty())
    return Unimplemented("unsupported: sparse dot %", instr.name(),
                         " (structured sparsity, sparsity=...; its metadata operands are not read by kiln)");
  if (instr.operand_count() != 2) return InvalidArgument("dot %", instr.name(), " takes 2 operands");
  for (Precision p : instr.attrs().precision_config.operand_precision)
    if (p == Precision::kPackedNibble) return Unimplemented("dot %", instr.name(), ": packed-nibble precision");
  if (!instr.attrs().sparsity.empty()) return Unimplemented("dot %", instr.name(), ": sparse dot");
  DotDimensionNumbers dn;
  if (instr.attrs().dot_dimension_numbers) dn = *instr.attrs().dot_dimension_numbers;
  const HloInstruction& lhs = *instr.operand(0);
  const HloInstruction& rhs = *instr.operand(1);
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  const int64_t nb = static_cast<int64_t>(dn.lhs_batch_dimensions.size());
  const int64_t nc = static_cast<int64_t>(dn.lhs_contracting_dimensions.size());
  if (static_cast<int64_t>(dn.rhs_batch_dimensions.size()) != nb ||
      static_cast<int64_t>(dn.rhs_contracting_dimensions.size()) != nc)
    return InvalidArgument("dot %", instr.name(), ": mismatched dimension numbers");
  std::vector<int64_t> lfree, rfree;
  for (int64_t d = 0; d < ls.rank(); ++d)
    if (!Contains(dn.lhs_batch_dimensions, d) && !Contains(dn.lhs_contracting_dimensions, d)) lfree.push_back(d);
  for (int64_t d = 0; d < rs.rank(); ++d)
    if (!Contains(dn.rhs_batch_dimensions, d) && !Contains(dn.rhs_contracting_dimensions, d)) rfree.push_back(d);
  const int64_t out_rank = nb + static_cast<int64_t>(lfree.size() + rfree.size());
  if (out_rank != instr.shape().rank() || static_cast<int64_t>(index.dims.size()) != out_rank)
    return InvalidArgument("dot %", instr.name(), ": result rank does not match the operands");
  // Output index: [batch...][lhs free...][rhs free...].
  Index li, ri;
  li.dims.assign(ls.rank(), IExpr(0));
  ri.dims.assign(rs.rank(), IExpr(0));
  for (int64_t i = 0; i < nb; ++i) {
    li.dims[dn.lhs_batch_dimensions[i]] = index.dims[i];
    ri.dims[dn.rhs_batch_dimensions[i]] = index.dims[i];
  }
  for (size_t j = 0; j < lfree.size(); ++j) li.dims[lfree[j]] = index.dims[nb + j];
  for (size_t j = 0; j < rfree.size(); ++j) ri.dims[rfree[j]] = index.dims[nb + lfree.size() + j];
  const PrimitiveType rt = instr.shape().element_type();
  const PrimitiveType acc_t = AccumulationType(rt);
  const std::string acc = code_.UniqueName(instr.name() + "_acc");
  code_.Line(RegisterType(acc_t) + " " + acc + " = " + ZeroLiteral(acc_t) + ";");
  const Value acc_v{acc, acc_t, code_.BlockIdAt(code_.depth())};
  bool empty = false;
  for (int64_t i = 0; i < nc; ++i) {
    const int64_t k = ls.dimensions(dn.lhs_contracting_dimensions[i]);
    if (k != rs.dimensions(dn.rhs_contracting_dimensions[i]))
      return InvalidArgument("dot %", instr.name(), ": contracting sizes differ");
    empty |= k == 0;
  }
  if (!empty) {
    // The contracting dimensions in lhs order, the last one innermost (the evaluator's order).
    int loops = 0;
    for (int64_t i = 0; i < nc; ++i) {
      const int64_t k = ls.dimensions(dn.lhs_contracting_dimensions[i]);
      if (k == 1) continue;
      const std::string v = code_.UniqueName("k" + std::to_string(i));
      code_.Open("for (" + code_.index_type() + " " + v + " = 0; " + v + " < " + code_.IndexLiteral(k) + "; ++" + v +
                     ")",
                 BlockKind::kLoop);
      const IExpr var = IExpr::Var(code_.DeclareVar(v, code_.depth(), 0, k - 1));
      li.dims[dn.lhs_contracting_dimensions[i]] = var;
      ri.dims[dn.rhs_contracting_dimensions[i]] = var;
      ++loops;
    }
    KILN_ASSIGN_OR_RETURN(Value a, Emit(lhs, li));
    KILN_ASSIGN_OR_RETURN(Value b, Emit(rhs, ri));
    KILN_ASSIGN_OR_RETURN(std::string mac, MacLine(acc, acc_t, a, b, rt));
    code_.Line(mac);
    for (int i = 0; i < loops; ++i) code_.Close();
  }
  KILN_ASSIGN_OR_RETURN(std::string result, ElementalOps::Convert(acc_t, rt, acc));
  return std::vector<Value>{Let(rt, instr.name(), result, {&acc_v})};
}

// XLA's convolution (eval/dot_conv.cc): output (batch n, feature o, spatial x...) sums, over the
// input features c of o's feature group and the kernel window k...,
//   lhs[batch bg(o) * N_out + n, feature fg(o) * C_g + c, spatial p...] * rhs[o, c, k'...]
// with u = x * stride - pad_low + k * window_dilation, p = u / base_dilation when u is a
// multiple of it and p lies in the input (else the tap reads zero), k' = size - 1 - k when the
// window is reversed; fg(o) = o / (O / feature_groups), bg(o) = o / (O / batch_groups).
StatusOr<std::vector<Value>> ElementalEmitter::EmitConvolution(const HloInstruction& instr, const Index& index) {
  if (instr.operand_count() != 2) return InvalidArgument("convolution %", instr.name(), " takes 2 operands");
  for (Precision p : instr.attrs().precision_config.operand_precision)
    if (p == Precision::kPackedNibble)
      return Unimplemented("convolution %", instr.name(), ": packed-nibble precision");
  const HloAttributes& at = instr.attrs();
  if (!at.convolution_dimension_numbers)
    return InvalidArgument("convolution %", instr.name(), " has no dim_labels");
  const ConvolutionDimensionNumbers& dn = *at.convolution_dimension_numbers;
  const HloInstruction& lhs = *instr.operand(0);
  const HloInstruction& rhs = *instr.operand(1);
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  const Shape& os = instr.shape();
  const size_t nsp = dn.input_spatial_dimensions.size();
  if (dn.kernel_spatial_dimensions.size() != nsp || dn.output_spatial_dimensions.size() != nsp ||
      ls.rank() != static_cast<int64_t>(nsp) + 2 || rs.rank() != static_cast<int64_t>(nsp) + 2 ||
      os.rank() != static_cast<int64_t>(nsp) + 2)
    return InvalidArgument("convolution %", instr.name(), ": ranks do not match dim_labels");
  std::vector<WindowDimension> win(nsp);
  if (at.window) {
    if (at.window->dimensions.size() != nsp)
      return InvalidArgument("convolution %", instr.name(), ": window rank differs from dim_labels");
    win = at.window->dimensions;
  }
  const int64_t fgc = at.feature_group_count, bgc = at.batch_group_count;
  const int64_t n_in = ls.dimensions(dn.input_batch_dimension);
  const int64_t c_in = ls.dimensions(dn.input_feature_dimension);
  const int64_t c_g = rs.dimensions(dn.kernel_input_feature_dimension);
  const int64_t o_out = rs.dimensions(dn.kernel_output_feature_dimension);
  const int64_t n_out = os.dimensions(dn.output_batch_dimension);
  if (fgc < 1 || bgc < 1 || c_in != c_g * fgc || o_out % fgc != 0 || o_out % bgc != 0 || n_in % bgc != 0 ||
      n_out != n_in / bgc || os.dimensions(dn.output_feature_dimension) != o_out)
    return InvalidArgument("convolution %", instr.name(), ": feature/batch group counts do not fit the shapes");
  for (size_t i = 0; i < nsp; ++i) {
    const WindowDimension& w = win[i];
    if (w.size != rs.dimensions(dn.kernel_spatial_dimensions[i]) || w.stride < 1 || w.base_dilation < 1 ||
        w.window_dilation < 1)
      return InvalidArgument("convolution %", instr.name(), ": bad window");
  }
  const PrimitiveType rt = os.element_type();
  const PrimitiveType acc_t = AccumulationType(rt);
  const std::string it = code_.index_type();
  const std::string acc = code_.UniqueName(instr.name() + "_acc");
  code_.Line(RegisterType(acc_t) + " " + acc + " = " + ZeroLiteral(acc_t) + ";");
  const Value acc_v{acc, acc_t, code_.BlockIdAt(code_.depth())};
  int64_t taps = c_g;
  for (size_t i = 0; i < nsp; ++i) taps *= win[i].size;
  if (taps > 0 && o_out > 0) {
    const IExpr n = index.dims[dn.output_batch_dimension];
    const IExpr o = index.dims[dn.output_feature_dimension];
    const IExpr fg = fgc == 1 ? IExpr(0) : code_.Div(o, o_out / fgc, "conv_fg");
    const IExpr bg = bgc == 1 ? IExpr(0) : code_.Div(o, o_out / bgc, "conv_bg");
    Index li, ri;
    li.dims.assign(ls.rank(), IExpr(0));
    ri.dims.assign(rs.rank(), IExpr(0));
    li.dims[dn.input_batch_dimension] = bg * n_out + n;
    ri.dims[dn.kernel_output_feature_dimension] = o;
    int loops = 0;
    auto open_loop = [&](const std::string& base, int64_t size) {
      const std::string v = code_.UniqueName(base);
      code_.Open("for (" + it + " " + v + " = 0; " + v + " < " + code_.IndexLiteral(size) + "; ++" + v + ")",
                 BlockKind::kLoop);
      ++loops;
      return IExpr::Var(code_.DeclareVar(v, code_.depth(), 0, size - 1));
    };
    // Input features outermost, then the window row-major (the evaluator's patch order).
    IExpr c(0);
    if (c_g > 1) c = open_loop("c", c_g);
    li.dims[dn.input_feature_dimension] = fg * c_g + c;
    ri.dims[dn.kernel_input_feature_dimension] = c;
    std::vector<std::string> conds;
    for (size_t i = 0; i < nsp; ++i) {
      const WindowDimension& w = win[i];
      IExpr k(0);
      if (w.size > 1) k = open_loop("kw" + std::to_string(i), w.size);
      ri.dims[dn.kernel_spatial_dimensions[i]] = w.window_reversal ? IExpr(w.size - 1) - k : k;
      const IExpr u = index.dims[dn.output_spatial_dimensions[i]] * w.stride - IExpr(w.padding_low) +
                      k * w.window_dilation;
      const int64_t dim = ls.dimensions(dn.input_spatial_dimensions[i]);
      // The input position, used only under `conds` (clamped for the reader otherwise).
      IExpr p = u;
      if (code_.Min(u) < 0) conds.push_back(code_.Render(u) + " >= 0");
      if (w.base_dilation == 1) {
        if (code_.Max(u) >= dim) conds.push_back(code_.Render(u) + " < " + code_.IndexLiteral(dim));
        if (!conds.empty()) p = code_.Clamp(u, 0, std::max<int64_t>(dim - 1, 0), "conv_p");
      } else {
        IExpr q = code_.Div(u, w.base_dilation, "conv_q");
        IExpr r = code_.Mod(u, w.base_dilation, "conv_r");
        if (!(r == IExpr(0))) conds.push_back(code_.Render(r) + " == 0");
        if (code_.Max(q) >= dim) conds.push_back(code_.Render(q) + " < " + code_.IndexLiteral(dim));
        p = code_.Clamp(q, 0, std::max<int64_t>(dim - 1, 0), "conv_p");
      }
      li.dims[dn.input_spatial_dimensions[i]] = p;
    }
    KILN_ASSIGN_OR_RETURN(Value b, Emit(rhs, ri));
    const PrimitiveType lt = ls.element_type();
    Value a;
    if (conds.empty()) {
      KILN_ASSIGN_OR_RETURN(a, Emit(lhs, li));
      KILN_ASSIGN_OR_RETURN(std::string mac, MacLine(acc, acc_t, a, b, rt));
      code_.Line(mac);
    } else if (acc_t == PrimitiveType::kU32 || acc_t == PrimitiveType::kU64) {
      // Integer products of a padding tap are zero: skip it.
      code_.Open("if (" + StrJoin(conds, " && ") + ")", BlockKind::kConditional);
      KILN_ASSIGN_OR_RETURN(a, Emit(lhs, li));
      KILN_ASSIGN_OR_RETURN(std::string mac, MacLine(acc, acc_t, a, b, rt));
      code_.Line(mac);
      code_.Close();
    } else {
      // Floating point: a padding tap contributes 0 * w (NaN for an infinite w), as in the
      // evaluator, whose patches hold zeros there.
      a = Value{code_.UniqueName(lhs.name() + "_tap"), lt, code_.BlockIdAt(code_.depth())};
      code_.Line(RegisterType(lt) + " " + a.expr + " = " + ZeroLiteral(lt) + ";");
      code_.Open("if (" + StrJoin(conds, " && ") + ")", BlockKind::kConditional);
      KILN_RETURN_IF_ERROR(AssignInto(a, lhs, li));
      code_.Close();
      KILN_ASSIGN_OR_RETURN(std::string mac, MacLine(acc, acc_t, a, b, rt));
      code_.Line(mac);
    }
    for (int i = 0; i < loops; ++i) code_.Close();
  }
  KILN_ASSIGN_OR_RETURN(std::string result, ElementalOps::Convert(acc_t, rt, acc));
  return std::vector<Value>{Let(rt, instr.name(), result, {&acc_v})};
}

}  // namespace kiln::codegen
