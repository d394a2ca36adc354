// Window ops as elemental values (docs/codegen.md, "Window ops"): reduce-window and
// select-and-scatter computed per output element, in the evaluator's exact order of
// combination, so the loop emitter runs them (and reduce-window fuses like any index map).
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_emitter.h"

namespace kiln::codegen {

namespace {

// Where window position `raw` (a coordinate of the padded, base-dilated operand, padding_low
// already subtracted) lands in the operand along one dimension of size `dim`: the operand index
// and the conditions under which it is a real element (not padding, not a base-dilation hole).
// The index is used only under the conditions.
IExpr WindowTap(CodeBuilder& code, const WindowDimension& wd, int64_t dim, const IExpr& raw,
                std::vector<std::string>& conds) {
  if (code.Min(raw) < 0) conds.push_back(code.Render(raw) + " >= 0");
  if (wd.base_dilation == 1) {
    if (code.Max(raw) >= dim) conds.push_back(code.Render(raw) + " < " + code.IndexLiteral(dim));
    return raw;
  }
  // raw may be negative: the conditions test it first; the quotient is clamped for the reader.
  IExpr q = code.Div(raw, wd.base_dilation, "win_q");
  IExpr r = code.Mod(raw, wd.base_dilation, "win_r");
  if (!(r == IExpr(0))) conds.push_back(code.Render(r) + " == 0");
  if (code.Max(q) >= dim) conds.push_back(code.Render(q) + " < " + code.IndexLiteral(dim));
  return code.Clamp(q, 0, dim - 1, "win_i");
}

Status CheckWindow(const HloInstruction& instr, const Shape& operand) {
  if (!instr.attrs().window)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " has no window");
  const auto& w = instr.attrs().window->dimensions;
  if (static_cast<int64_t>(w.size()) != operand.rank())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": window rank ",
                           w.size(), " for an operand of rank ", operand.rank());
  for (const WindowDimension& wd : w) {
    if (wd.size < 1 || wd.stride < 1 || wd.window_dilation < 1 || wd.base_dilation < 1)
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": window sizes, strides and dilations must be positive");
    if (wd.window_reversal)
      return Unimplemented(HloOpcodeString(instr.opcode()), " %", instr.name(), ": window reversal");
  }
  return OkStatus();
}

}  // namespace

// Output element o reduces, in row-major window order, the operand elements its window covers:
// position k of dimension d sits at o*stride - padding_low + k*window_dilation of the
// base-dilated operand; padding and dilation holes are skipped (the evaluator's semantics: the
// init value is the accumulator's start, never combined again).
StatusOr<std::vector<Value>> ElementalEmitter::EmitReduceWindow(const HloInstruction& instr,
                                                                const Index& index) {
  const int64_t n = instr.operand_count() / 2;
  if (n == 0 || instr.operand_count() != 2 * n || instr.to_apply() == nullptr)
    return InvalidArgument("reduce-window %", instr.name(), ": malformed");
  const Shape& in = instr.operand(0)->shape();
  KILN_RETURN_IF_ERROR(CheckWindow(instr, in));
  const auto& window = instr.attrs().window->dimensions;
  std::vector<Value> acc;
  for (int64_t k = 0; k < n; ++k) {
    KILN_ASSIGN_OR_RETURN(Value init, Emit(*instr.operand(n + k), Index{}));
    std::string name = code_.UniqueName(instr.name() + "_acc");
    code_.Line(RegisterType(init.type) + " " + name + " = " + init.expr + ";");
    acc.push_back(Value{name, init.type, code_.BlockIdAt(code_.depth())});
  }
  int blocks = 0;
  std::vector<IExpr> raw(in.rank());
  std::vector<bool> bounded(in.rank(), false);
  const std::string it = code_.index_type();
  for (int64_t d = 0; d < in.rank(); ++d) {
    const WindowDimension& wd = window[d];
    const IExpr base = index.dims[d] * wd.stride - IExpr(wd.padding_low);
    raw[d] = base;
    if (wd.size == 1) continue;
    std::string v = code_.UniqueName("w" + std::to_string(d));
    const int64_t dim = in.dimensions(d), w = wd.window_dilation;
    const bool edges = code_.Min(base) < 0 || code_.Max(base) + (wd.size - 1) * w >= dim;
    if (edges && wd.base_dilation == 1) {
      // The window positions inside the operand, [ceil(-base / w), floor((dim - 1 - base) / w)]
      // clipped to [0, size): loop over those only (a cumsum's window is mostly padding).
      const std::string lo = code_.Render(-code_.Div(base, w, "win_lo"));
      const std::string hi = code_.Render(code_.Div(IExpr(dim - 1) - base, w, "win_hi"));
      const std::string last = code_.IndexLiteral(wd.size - 1);
      code_.Open("for (" + it + " " + v + " = (" + lo + ") < 0 ? 0 : (" + lo + "); " + v + " <= ((" + hi +
                     ") < " + last + " ? (" + hi + ") : " + last + "); ++" + v + ")",
                 BlockKind::kLoop);
      bounded[d] = true;
    } else {
      code_.Open("for (" + it + " " + v + " = 0; " + v + " < " + code_.IndexLiteral(wd.size) + "; ++" + v + ")",
                 BlockKind::kLoop);
    }
    raw[d] = raw[d] + IExpr::Var(code_.DeclareVar(v, code_.depth(), 0, wd.size - 1)) * w;
    ++blocks;
  }
  Index ii;
  std::vector<std::string> conds;
  for (int64_t d = 0; d < in.rank(); ++d) {
    // A bounded loop only visits positions inside the operand: no conditions.
    std::vector<std::string> unused;
    ii.dims.push_back(WindowTap(code_, window[d], in.dimensions(d), raw[d], bounded[d] ? unused : conds));
  }
  if (!conds.empty()) {
    code_.Open("if (" + StrJoin(conds, " && ") + ")", BlockKind::kConditional);
    ++blocks;
  }
  std::vector<Value> args = acc;
  for (int64_t k = 0; k < n; ++k) {
    KILN_ASSIGN_OR_RETURN(Value v, Emit(*instr.operand(k), ii));
    args.push_back(v);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value> r,
                        CallComputation(*instr.to_apply(), args, instr.name(), code_.depth()));
  for (int64_t k = 0; k < n; ++k) code_.Line(acc[k].expr + " = " + r[k].expr + ";");
  for (int i = 0; i < blocks; ++i) code_.Close();
  return acc;
}

// The gather form of select-and-scatter: output element p starts at the init value and, for
// each source window that covers p (row-major, the evaluator's order), selects that window's
// element (the first valid one, replaced by a later x whenever select(best, x) is false) and,
// when the selection is p, becomes scatter(source[window], current). Deterministic: no atomics.
StatusOr<std::vector<Value>> ElementalEmitter::EmitSelectAndScatter(const HloInstruction& instr,
                                                                    const Index& index) {
  if (instr.operand_count() != 3 || instr.called_computations().size() < 2)
    return InvalidArgument("select-and-scatter %", instr.name(), ": malformed");
  const HloInstruction& operand = *instr.operand(0);
  const HloInstruction& source = *instr.operand(1);
  const Shape& in = operand.shape();
  KILN_RETURN_IF_ERROR(CheckWindow(instr, in));
  if (source.shape().rank() != in.rank())
    return InvalidArgument("select-and-scatter %", instr.name(), ": source rank differs");
  const auto& window = instr.attrs().window->dimensions;
  const PrimitiveType t = instr.shape().element_type();
  const std::string it = code_.index_type();
  KILN_ASSIGN_OR_RETURN(Value init, Emit(*instr.operand(2), Index{}));
  Value out{code_.UniqueName(instr.name()), t, code_.BlockIdAt(code_.depth())};
  code_.Line(RegisterType(t) + " " + out.expr + " = " + init.expr + ";");
  int blocks = 0;
  // Source windows s covering p along d: s*stride - padding_low + k*window_dilation ==
  // p*base_dilation for some k in [0, size), i.e. s in [ceil(lo / stride), floor(hi / stride)].
  std::vector<IExpr> s(in.rank());
  for (int64_t d = 0; d < in.rank(); ++d) {
    const WindowDimension& wd = window[d];
    const int64_t src = source.shape().dimensions(d);
    const IExpr hi_num = index.dims[d] * wd.base_dilation + IExpr(wd.padding_low);
    const IExpr lo_num = hi_num - IExpr((wd.size - 1) * wd.window_dilation);
    const IExpr lo = -code_.Div(-lo_num, wd.stride, "sas_lo");
    const IExpr hi = code_.Div(hi_num, wd.stride, "sas_hi");
    const std::string v = code_.UniqueName("s" + std::to_string(d));
    const std::string lo_s = code_.Render(lo), hi_s = code_.Render(hi);
    const std::string last = code_.IndexLiteral(src - 1);
    code_.Open("for (" + it + " " + v + " = (" + lo_s + ") < 0 ? 0 : (" + lo_s + "); " + v +
                   " <= ((" + hi_s + ") < " + last + " ? (" + hi_s + ") : " + last + "); ++" + v + ")",
               BlockKind::kLoop);
    s[d] = IExpr::Var(code_.DeclareVar(v, code_.depth(), 0, std::max<int64_t>(src - 1, 0)));
    ++blocks;
  }
  // The selection within window s.
  const std::string has = code_.UniqueName("has"), best = code_.UniqueName("best");
  code_.Line("bool " + has + " = false;");
  code_.Line(RegisterType(t) + " " + best + " = " + init.expr + ";");
  const int best_block = code_.BlockIdAt(code_.depth());
  std::vector<std::string> best_pos;
  for (int64_t d = 0; d < in.rank(); ++d) {
    best_pos.push_back(code_.UniqueName("best_i" + std::to_string(d)));
    code_.Line(it + " " + best_pos.back() + " = 0;");
  }
  int inner = 0;
  std::vector<IExpr> raw(in.rank());
  for (int64_t d = 0; d < in.rank(); ++d) {
    const WindowDimension& wd = window[d];
    raw[d] = s[d] * wd.stride - IExpr(wd.padding_low);
    if (wd.size == 1) continue;
    std::string v = code_.UniqueName("w" + std::to_string(d));
    code_.Open("for (" + it + " " + v + " = 0; " + v + " < " + code_.IndexLiteral(wd.size) + "; ++" + v + ")",
               BlockKind::kLoop);
    raw[d] = raw[d] + IExpr::Var(code_.DeclareVar(v, code_.depth(), 0, wd.size - 1)) * wd.window_dilation;
    ++inner;
  }
  Index ii;
  std::vector<std::string> conds;
  for (int64_t d = 0; d < in.rank(); ++d)
    ii.dims.push_back(WindowTap(code_, window[d], in.dimensions(d), raw[d], conds));
  if (!conds.empty()) {
    code_.Open("if (" + StrJoin(conds, " && ") + ")", BlockKind::kConditional);
    ++inner;
  }
  KILN_ASSIGN_OR_RETURN(Value x, Emit(operand, ii));
  const std::string take = code_.UniqueName("take");
  code_.Line("bool " + take + " = !" + has + ";");
  code_.Open("if (" + has + ")", BlockKind::kConditional);
  {
    Value best_v{best, t, best_block};
    KILN_ASSIGN_OR_RETURN(std::vector<Value> keep,
                          CallComputation(*instr.select(), {best_v, x}, "keep", code_.depth()));
    code_.Line(take + " = !(" + keep[0].expr + ");");
  }
  code_.Close();
  code_.Open("if (" + take + ")", BlockKind::kConditional);
  code_.Line(has + " = true;");
  code_.Line(best + " = " + x.expr + ";");
  for (int64_t d = 0; d < in.rank(); ++d) code_.Line(best_pos[d] + " = " + code_.Render(ii.dims[d]) + ";");
  code_.Close();
  for (int i = 0; i < inner; ++i) code_.Close();
  // Scatter when this window selected p.
  std::vector<std::string> hit = {has};
  for (int64_t d = 0; d < in.rank(); ++d) hit.push_back(best_pos[d] + " == " + code_.Render(index.dims[d]));
  code_.Open("if (" + StrJoin(hit, " && ") + ")", BlockKind::kConditional);
  {
    Index si;
    si.dims = s;
    KILN_ASSIGN_OR_RETURN(Value g, Emit(source, si));
    KILN_ASSIGN_OR_RETURN(std::vector<Value> r,
                          CallComputation(*instr.scatter(), {g, out}, instr.name(), code_.depth()));
    code_.Line(out.expr + " = " + r[0].expr + ";");
  }
  code_.Close();
  for (int i = 0; i < blocks; ++i) code_.Close();
  return std::vector<Value>{out};
}

}  // namespace kiln::codegen
