// The scan emitter: cumulative reductions (lax.cumsum / cumprod / cummax / cummin /
// cumlogsumexp) written as reduce-window, whose window spans the whole axis with the padding on
// one side. The loop emitter would compute each output element from its whole window: O(n^2)
// per row. Here each row is cut into chunks and scanned in three launches (Note [Chunked scan]).
#include <algorithm>
#include <cmath>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/emitter_common.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/emitters_internal.h"

namespace kiln::codegen {

// Note [Chunked scan]
// Output element i of a forward scan along an axis of n is init + x[0] + ... + x[i] (+ the
// reducer, in that order: the evaluator's); a reverse one (padding high) is init + x[i] + ... +
// x[n-1]. Rows are [outer, n, inner] around the axis, each cut into chunks of `tile` positions
// in scan order (from the end for a reverse scan). With one chunk per row one launch scans each
// row sequentially (one thread per row and inner index). Otherwise:
//   1. totals:  one thread per (row, chunk) reduces its chunk in scan order into scratch;
//   2. carries: one thread per row scans the chunk totals, starting at init, writing each
//               chunk's carry-in (init + the totals before it) into scratch;
//   3. scan:    one thread per (row, chunk) starts at its carry-in and combines its chunk's
//               elements in order, storing each prefix.
// Threads never cooperate (no shared memory, barriers or atomics), consecutive threads take
// consecutive inner indices (coalesced when the axis is not the minor one). The chunked form
// reassociates the reducer: exact for integers and for max / min, within the backend tolerance
// for f32 / f64 / complex sums and products. Narrow floats round every step, so a long
// reassociated bf16 sum can differ from the sequential one by more than their tolerance: they
// take the scan only for reductions that reassociate exactly (max / min) or axes of at least
// kNarrowScanLength, where the O(n^2) loop is no longer affordable; shorter ones stay
// sequential (the loop emitter, bit-exact).

namespace {

constexpr int64_t kMinScanLength = 16;
constexpr int64_t kNarrowScanLength = 8192;

// Whether the reducer `c` is max or min of its two parameters (reassociates exactly).
bool IsMaxMin(const HloComputation& c) {
  const HloInstruction* r = c.root_instruction();
  if (r->opcode() != HloOpcode::kMaximum && r->opcode() != HloOpcode::kMinimum) return false;
  return r->operand(0)->opcode() == HloOpcode::kParameter && r->operand(1)->opcode() == HloOpcode::kParameter &&
         r->operand(0) != r->operand(1);
}

}  // namespace

std::optional<ScanPattern> MatchScan(const HloInstruction& rw) {
  if (rw.opcode() != HloOpcode::kReduceWindow || rw.operand_count() != 2 || !rw.shape().IsArray() ||
      rw.to_apply() == nullptr || !rw.attrs().window)
    return std::nullopt;
  const Shape& in = rw.operand(0)->shape();
  const auto& w = rw.attrs().window->dimensions;
  if (!in.IsArray() || static_cast<int64_t>(w.size()) != in.rank() || rw.shape().dimensions() != in.dimensions())
    return std::nullopt;
  std::optional<ScanPattern> p;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const WindowDimension& wd = w[d];
    if (wd.stride != 1 || wd.window_dilation != 1 || wd.base_dilation != 1 || wd.window_reversal) return std::nullopt;
    const int64_t n = in.dimensions(d);
    if (wd.size == 1 && wd.padding_low == 0 && wd.padding_high == 0) continue;
    if (p || n < 2 || wd.size != n) return std::nullopt;
    if (wd.padding_low == n - 1 && wd.padding_high == 0) p = ScanPattern{d, n, false};
    else if (wd.padding_low == 0 && wd.padding_high == n - 1) p = ScanPattern{d, n, true};
    else return std::nullopt;
  }
  if (!p || p->length < kMinScanLength) return std::nullopt;
  const PrimitiveType t = rw.shape().element_type();
  if (IsNarrowFloat(t) && !IsMaxMin(*rw.to_apply()) && p->length < kNarrowScanLength) return std::nullopt;
  return p;
}

namespace {

// The reduce-window the scan computes: `instr` itself or the root of its fusion.
StatusOr<const HloInstruction*> ScanRoot(const FusionView& view, const HloInstruction& instr) {
  if (view.outputs.size() != 1 || view.outputs[0].tuple_index >= 0 || view.outputs[0].value == nullptr)
    return Unimplemented("scan emitter: %", instr.name(), " has several outputs");
  const HloInstruction* rw = view.outputs[0].value;
  if (!MatchScan(*rw)) return Unimplemented("scan emitter: %", instr.name(), " is not a cumulative reduce-window");
  // Nothing else of the kernel may read the scan (its elements exist only at the end).
  if (view.computation != nullptr && rw->user_count() != 0)
    return Unimplemented("scan emitter: the scan of %", instr.name(), " is read inside the fusion");
  return rw;
}

}  // namespace

StatusOr<KernelSpec> EmitScan(const HloInstruction& instr, const DeviceSpec& device, const KernelConfig& config) {
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  KILN_ASSIGN_OR_RETURN(const HloInstruction* rw, ScanRoot(view, instr));
  const ScanPattern p = *MatchScan(*rw);
  const Shape& in = rw->operand(0)->shape();
  const Shape out_shape = view.outputs[0].shape;
  const PrimitiveType t = rw->shape().element_type();
  const int64_t n = p.length;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (d < p.dim) outer *= in.dimensions(d);
    if (d > p.dim) inner *= in.dimensions(d);
  }
  const int64_t rows = outer * inner;
  if (rows == 0) return Unimplemented("scan emitter: %", instr.name(), " is empty");

  KernelConfig c = config;
  if (c.block_size == 0) c.block_size = 256;
  if (c.tile == 0) {
    // Enough rows to fill the device: one sequential pass per row. Else chunks of about
    // sqrt(n) (a power of two), so that the carry pass is about as long as a chunk.
    if (rows >= device.resident_threads()) {
      c.tile = static_cast<int>(std::min<int64_t>(n, 1 << 30));
    } else {
      int64_t tile = 16;
      while (tile * tile < n) tile *= 2;
      c.tile = static_cast<int>(std::min(tile, n));
    }
  }
  c.vector_width = 1;
  c.unroll = 1;
  if (c.block_size < 32 || c.block_size > device.max_threads_per_block || c.block_size % 32 != 0 || c.tile < 1)
    return InvalidArgument("scan emitter: bad config ", c.ToString());
  if (c.tile > n) c.tile = static_cast<int>(n);
  const int64_t tile = c.tile;
  const int64_t chunks = CeilDiv(n, tile);
  const int B = c.block_size;
  const Shape logical = Shape::ArrayWithDefaultLayout(t, in.dimensions());

  KernelAssembler ka(view, "scan", c, device.dialect);
  const std::string name = SanitizeIdentifier(instr.name());
  const std::string reg = RegisterType(t);
  const int64_t slots = outer * chunks * inner;
  std::string scratch;
  if (chunks > 1) scratch = ka.AddScratch(std::max<int64_t>(2 * slots * RegisterBytes(t), 16));
  ka.source().AddHeaderComment(StrCat("scan: ", p.reverse ? "reverse" : "forward", " along dimension ", p.dim,
                                      " of ", n, ", ", rows, " rows, ", chunks, " chunk(s) of ", tile));

  // The operand index of scan position q (scan order) of row (o, i).
  auto operand_index = [&](ElementalEmitter& em, const IExpr& o, const IExpr& i, const IExpr& q) {
    const IExpr pos = p.reverse ? IExpr(n - 1) - q : q;
    return em.Delinearize((o * n + pos) * inner + i, logical);
  };
  // Declares g = blockIdx.x * B + threadIdx.x and opens `if (g < count)`.
  auto thread = [&](CodeBuilder& code, int64_t count) {
    const int64_t grid = std::max<int64_t>(1, CeilDiv(count, B));
    code.Line("const " + code.index_type() + " g = (" + code.index_type() + ")blockIdx.x * " + std::to_string(B) +
              " + threadIdx.x;");
    const IExpr g = IExpr::Var(code.DeclareVar("g", 0, 0, grid * B - 1));
    code.Open("if (g < " + code.IndexLiteral(count) + ")", BlockKind::kConditional);
    return g;
  };
  auto dims = [&](int64_t count) {
    runtime::LaunchDims d;
    d.grid.x = static_cast<uint32_t>(std::max<int64_t>(1, CeilDiv(count, B)));
    d.block.x = static_cast<uint32_t>(B);
    return d;
  };
  auto slot_ptr = [&](CodeBuilder& code, const std::string& region) {
    // Two regions of `slots` register values: the chunk totals, then the carries.
    std::string s = "reinterpret_cast<" + reg + "*>(" + scratch + ")";
    if (region == "carry") s = "(" + s + " + " + code.IndexLiteral(slots) + ")";
    return s;
  };
  // acc = reducer(acc, v) in the current block.
  auto combine = [&](ElementalEmitter& em, CodeBuilder& code, const Value& acc, const Value& v) -> Status {
    KILN_ASSIGN_OR_RETURN(std::vector<Value> r, em.CallComputation(*rw->to_apply(), {acc, v}, rw->name(), code.depth()));
    code.Line(acc.expr + " = " + r[0].expr + ";");
    return OkStatus();
  };
  // Opens the loop over the scan positions of chunk `ch` from `first` on; returns q.
  auto chunk_loop = [&](CodeBuilder& code, const IExpr& ch, int64_t first) {
    const std::string it = code.index_type();
    const std::string lo = code.Render(ch * tile + first);
    const std::string hi = code.Render(ch * tile + tile);
    const std::string q = code.UniqueName("q");
    code.Open("for (" + it + " " + q + " = " + lo + "; " + q + " < (" + hi + " < " + code.IndexLiteral(n) + " ? " + hi +
                  " : " + code.IndexLiteral(n) + "); ++" + q + ")",
              BlockKind::kLoop);
    return IExpr::Var(code.DeclareVar(q, code.depth(), first, n - 1));
  };
  // (o, chunk, i) of thread g over outer x chunks x inner.
  struct Split {
    IExpr o, ch, i;
  };
  auto split = [&](CodeBuilder& code, const IExpr& g, int64_t parts) {
    Split s;
    s.i = code.Mod(g, inner, "inner");
    const IExpr rest = code.Div(g, inner, "rest");
    s.ch = code.Mod(rest, parts, "chunk");
    s.o = code.Div(rest, parts, "outer");
    return s;
  };

  if (chunks > 1) {
    // 1. chunk totals.
    CodeBuilder code(ka.index_type());
    ElementalEmitter em(ka.source(), code);
    ka.BindLeaves(em);
    const IExpr g = thread(code, slots);
    const Split s = split(code, g, chunks);
    KILN_ASSIGN_OR_RETURN(Value first, em.Emit(*rw->operand(0), operand_index(em, s.o, s.i, s.ch * tile)));
    const std::string acc = code.UniqueName("acc");
    code.Line(reg + " " + acc + " = " + first.expr + ";");
    const Value av{acc, t, code.BlockIdAt(code.depth())};
    {
      const IExpr q = chunk_loop(code, s.ch, 1);
      KILN_ASSIGN_OR_RETURN(Value x, em.Emit(*rw->operand(0), operand_index(em, s.o, s.i, q)));
      KILN_RETURN_IF_ERROR(combine(em, code, av, x));
      code.Close();
    }
    code.Line(slot_ptr(code, "total") + "[" + code.Render(g) + "] = " + acc + ";");
    code.Close();
    KILN_ASSIGN_OR_RETURN(std::string text, code.Finish());
    ka.AddEntry("scan_totals_" + name, B, text);
    ka.NoteReads(em);
    ka.AddLaunch("scan_totals_" + name, dims(slots));
  }
  if (chunks > 1) {
    // 2. carries: per row, init then the totals in chunk order.
    CodeBuilder code(ka.index_type());
    ElementalEmitter em(ka.source(), code);
    ka.BindLeaves(em);
    const IExpr g = thread(code, rows);
    const IExpr i = code.Mod(g, inner, "inner");
    const IExpr o = code.Div(g, inner, "outer");
    KILN_ASSIGN_OR_RETURN(Value init, em.Emit(*rw->operand(1), Index{}));
    const std::string carry = code.UniqueName("carry");
    code.Line(reg + " " + carry + " = " + init.expr + ";");
    const Value cv{carry, t, code.BlockIdAt(code.depth())};
    const std::string it = code.index_type();
    code.Open("for (" + it + " ch = 0; ch < " + code.IndexLiteral(chunks) + "; ++ch)", BlockKind::kLoop);
    const IExpr ch = IExpr::Var(code.DeclareVar("ch", code.depth(), 0, chunks - 1));
    const std::string slot = code.Render((o * chunks + ch) * inner + i);
    code.Line(slot_ptr(code, "carry") + "[" + slot + "] = " + carry + ";");
    const std::string tot = code.UniqueName("total");
    code.Line("const " + reg + " " + tot + " = " + slot_ptr(code, "total") + "[" + slot + "];");
    KILN_RETURN_IF_ERROR(combine(em, code, cv, Value{tot, t, code.BlockIdAt(code.depth())}));
    code.Close();
    code.Close();
    KILN_ASSIGN_OR_RETURN(std::string text, code.Finish());
    ka.AddEntry("scan_carries_" + name, B, text);
    ka.NoteReads(em);
    ka.AddLaunch("scan_carries_" + name, dims(rows));
  }
  {
    // 3. the scan proper: from the chunk's carry-in (init with one chunk), every prefix stored.
    CodeBuilder code(ka.index_type());
    ElementalEmitter em(ka.source(), code);
    ka.BindLeaves(em);
    const IExpr g = thread(code, slots);
    const Split s = split(code, g, chunks);
    const std::string acc = code.UniqueName("acc");
    if (chunks > 1) {
      code.Line(reg + " " + acc + " = " + slot_ptr(code, "carry") + "[" + code.Render(g) + "];");
    } else {
      KILN_ASSIGN_OR_RETURN(Value init, em.Emit(*rw->operand(1), Index{}));
      code.Line(reg + " " + acc + " = " + init.expr + ";");
    }
    const Value av{acc, t, code.BlockIdAt(code.depth())};
    const IExpr q = chunk_loop(code, s.ch, 0);
    const Index idx = operand_index(em, s.o, s.i, q);
    KILN_ASSIGN_OR_RETURN(Value x, em.Emit(*rw->operand(0), idx));
    KILN_RETURN_IF_ERROR(combine(em, code, av, x));
    const IExpr off = em.Offset(out_shape, idx);
    code.Line(ka.output_pointer(0) + "[" + code.Render(off) + "] = " + StoreConvert(t, acc) + ";");
    code.Close();
    code.Close();
    KILN_ASSIGN_OR_RETURN(std::string text, code.Finish());
    ka.AddEntry("scan_" + name, B, text);
    ka.NoteReads(em);
    ka.AddLaunch("scan_" + name, dims(slots));
  }
  return ka.Finish();
}

}  // namespace kiln::codegen
