// The loop emitter (and the in-place dynamic-update-slice emitter, which is a loop over the
// update window).
//
// Thread mapping: the output's physical elements are cut into vectors of V consecutive
// elements; thread t of block b handles vectors b*B*U + u*B + t for u < U (consecutive threads
// take consecutive vectors, so every access of a warp is one coalesced span). A vector's lanes
// are computed in an unrolled loop; operands read at lane-contiguous, aligned offsets are loaded
// once per vector (16 bytes), outputs are stored the same way. The last partial vector (when V
// does not divide the element count) is computed element by element by the thread that owns
// it.
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/emitter_common.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/emitters_internal.h"

namespace kiln::codegen {

namespace {

// Emits the values of every output at `index` and stores them (vectorized when planned).
Status EmitOutputs(ElementalEmitter& em, KernelAssembler& ka, const Index& index,
                   const std::vector<Index>& out_indices) {
  CodeBuilder& code = em.code();
  const FusionView& view = ka.view();
  const bool lanes = em.lane().var >= 0 && em.lane().width > 1;
  std::vector<StorePlan> plans(view.outputs.size());
  if (lanes) {
    for (size_t k = 0; k < view.outputs.size(); ++k)
      plans[k] = PlanStore(em, ka.output_pointer(k), view.outputs[k].shape, out_indices[k],
                           view.outputs[k].value->name());
  }
  for (size_t k = 0; k < view.outputs.size(); ++k) {
    const KernelOutput& o = view.outputs[k];
    Value v;
    if (o.tuple_index >= 0) {
      KILN_ASSIGN_OR_RETURN(std::vector<Value> t, em.EmitTuple(*o.value, index));
      v = t[o.tuple_index];
    } else {
      KILN_ASSIGN_OR_RETURN(v, em.Emit(*o.value, index));
    }
    EmitStore(em, plans[k], ka.output_pointer(k), o.shape, out_indices[k], v);
  }
  if (lanes) {
    const int width = em.lane().width;
    code.Close();  // the lane loop
    em.SetLane(LaneContext{});
    for (size_t k = 0; k < view.outputs.size(); ++k)
      FinishStore(code, plans[k], ka.output_pointer(k), view.outputs[k].shape, width);
  }
  return OkStatus();
}

}  // namespace

int64_t ReduceRecomputeFactor(const FusionView& view, int64_t iteration_elements) {
  // Each element of a reduce's result is recomputed once per iteration element that reaches
  // it: iteration_elements / result elements times when the result is broadcast back.
  int64_t worst = 1;
  for (const HloInstruction* i : view.body) {
    if (i->opcode() != HloOpcode::kReduce) continue;
    const Shape& out = i->shape().IsTuple() ? i->shape().tuple_shapes(0) : i->shape();
    int64_t out_elems = std::max<int64_t>(1, out.num_elements());
    if (iteration_elements > out_elems) worst = std::max(worst, iteration_elements / out_elems);
  }
  return worst;
}

KernelConfig ResolveLoopConfig(const FusionView& view, const DeviceSpec& device,
                               const KernelConfig& config) {
  KernelConfig c = config;
  const Shape& shape = view.outputs[0].shape;
  const int64_t n = std::max<int64_t>(1, shape.num_elements());
  if (c.block_size == 0) c.block_size = 256;
  if (c.vector_width == 0) {
    int bytes = 1;
    for (const KernelOutput& o : view.outputs) bytes = std::max(bytes, StorageBytes(o.shape.element_type()));
    for (const HloInstruction* l : view.leaves)
      if (l->shape().num_elements() >= n) bytes = std::max(bytes, StorageBytes(l->shape().element_type()));
    int v = std::max(1, std::min(8, 16 / bytes));
    // Keep a vector inside one row of the output's minor dimension.
    std::vector<int64_t> m2m = MinorToMajor(shape);
    int64_t minor = 1;
    for (int64_t d : m2m)
      if (shape.dimensions(d) != 1) {
        minor = shape.dimensions(d);
        break;
      }
    while (v > 1 && (minor % v != 0 || n < v)) v /= 2;
    c.vector_width = v;
  }
  if (c.unroll == 0) {
    int64_t vectors = CeilDiv(n, c.vector_width);
    c.unroll = vectors >= 8 * device.resident_threads() ? 2 : 1;
  }
  return c;
}

StatusOr<KernelSpec> EmitLoop(const HloInstruction& instr, const DeviceSpec& device,
                              const KernelConfig& config) {
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  const Shape& shape = view.outputs[0].shape;
  for (const KernelOutput& o : view.outputs)
    if (o.shape.dimensions() != shape.dimensions())
      return Unimplemented("loop emitter: outputs of %", instr.name(), " have different dimensions (",
                           shape.ToString(false), " and ", o.shape.ToString(false), ")");
  const int64_t n = shape.num_elements();
  if (ReduceRecomputeFactor(view, n) > 64)
    return Unimplemented("loop emitter: %", instr.name(),
                         " would recompute a reduction for each of its elements");
  KernelConfig c = ResolveLoopConfig(view, device, config);
  if (c.block_size < 32 || c.block_size > device.max_threads_per_block || c.block_size % 32 != 0)
    return InvalidArgument("loop emitter: block size ", c.block_size, " not a multiple of 32 in [32, ",
                           device.max_threads_per_block, "]");
  if (c.vector_width < 1 || c.vector_width > 16 || (c.vector_width & (c.vector_width - 1)) != 0)
    return InvalidArgument("loop emitter: vector width ", c.vector_width, " is not a power of two <= 16");
  if (c.unroll < 1 || c.unroll > 16) return InvalidArgument("loop emitter: unroll ", c.unroll, " not in [1, 16]");
  const int B = c.block_size, V = c.vector_width, U = c.unroll;
  const int64_t full = n / V;                       // complete vectors
  const bool tail = n % V != 0;
  const int64_t vectors = CeilDiv(std::max<int64_t>(n, 1), V);
  const int64_t grid = std::max<int64_t>(1, CeilDiv(vectors, int64_t{B} * U));
  if (grid > INT32_MAX) return Unimplemented("loop emitter: grid too large");

  KernelAssembler ka(view, "loop", c, device.dialect);
  CodeBuilder code(ka.index_type());
  ElementalEmitter em(ka.source(), code);
  ka.BindLeaves(em);
  const std::string it = code.index_type();
  code.Comment("Each thread computes " + std::to_string(U) + " vector(s) of " + std::to_string(V) +
               " consecutive elements of " + shape.ToString() + ".");
  code.Line("const " + it + " first_vector = (" + it + ")blockIdx.x * " + std::to_string(int64_t{B} * U) +
            " + threadIdx.x;");
  const int first = code.DeclareVar("first_vector", 0, 0, grid * B * U - 1);
  (void)first;
  if (U > 1) {
    code.Open("for (int u = 0; u < " + std::to_string(U) + "; ++u)", BlockKind::kLoop, "#pragma unroll");
  }
  const std::string vi_expr = U > 1 ? "first_vector + u * " + std::to_string(B) : "first_vector";
  if (full > 0) {
    code.Open("if (" + vi_expr + " < " + code.IndexLiteral(full) + ")", BlockKind::kConditional);
    // Within this block the vector index is below `full`.
    IExpr vi = DeclareIndex(code, "vector", vi_expr, 0, full - 1);
    IExpr linear = vi * V;
    LaneContext lane;
    if (V > 1) {
      code.Open("for (int lane = 0; lane < " + std::to_string(V) + "; ++lane)", BlockKind::kLoop,
                "#pragma unroll");
      lane.var = code.DeclareVar("lane", code.depth(), 0, V - 1);
      lane.width = V;
      lane.depth = code.depth();
      linear = linear + IExpr::Var(lane.var);
      em.SetLane(lane);
    }
    Index index = em.Delinearize(linear, shape);
    std::vector<Index> out_indices(view.outputs.size(), index);
    KILN_RETURN_IF_ERROR(EmitOutputs(em, ka, index, out_indices));
    code.Close();  // if (vector < full)
  }
  if (tail) {
    code.Open("if (" + vi_expr + " == " + code.IndexLiteral(full) + ")",
              BlockKind::kConditional);
    code.Comment("The last, partial vector: element by element.");
    code.Open("for (" + it + " e = " + code.IndexLiteral(full * V) + "; e < " + code.IndexLiteral(n) +
                  "; ++e)",
              BlockKind::kLoop);
    IExpr e = IExpr::Var(code.DeclareVar("e", code.depth(), full * V, n - 1));
    Index index = em.Delinearize(e, shape);
    std::vector<Index> out_indices(view.outputs.size(), index);
    KILN_RETURN_IF_ERROR(EmitOutputs(em, ka, index, out_indices));
    code.Close();
    code.Close();
  }
  if (U > 1) code.Close();
  KILN_ASSIGN_OR_RETURN(std::string body, code.Finish());
  std::string entry = "loop_" + SanitizeIdentifier(instr.name());
  ka.AddEntry(entry, B, body);
  ka.NoteReads(em);
  runtime::LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(grid);
  dims.block.x = static_cast<uint32_t>(B);
  ka.AddLaunch(entry, dims);
  return ka.Finish();
}

namespace {

std::vector<int64_t> NonUnitDims(const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims)
    if (d != 1) out.push_back(d);
  return out;
}

}  // namespace

int64_t InPlaceDusOutput(const FusionView& view) {
  int64_t found = -1;
  for (size_t k = 0; k < view.outputs.size(); ++k) {
    const KernelOutput& o = view.outputs[k];
    if (o.tuple_index >= 0 || o.value == nullptr) return -1;
    if (o.value->opcode() != HloOpcode::kDynamicUpdateSlice) continue;
    if (found >= 0) return -1;  // one in-place update per kernel
    const HloInstruction* target = o.value->operand(0);
    if (std::find(view.leaves.begin(), view.leaves.end(), target) == view.leaves.end()) return -1;
    if (target->user_count() != 1) return -1;
    // Only worth it when the update is smaller than the array.
    if (o.value->operand(1)->shape().num_elements() >= o.value->shape().num_elements()) return -1;
    found = static_cast<int64_t>(k);
  }
  if (found < 0) return -1;
  const std::vector<int64_t> window = NonUnitDims(view.outputs[found].value->operand(1)->shape().dimensions());
  for (size_t k = 0; k < view.outputs.size(); ++k)
    if (static_cast<int64_t>(k) != found && NonUnitDims(view.outputs[k].shape.dimensions()) != window) return -1;
  return found;
}

StatusOr<KernelSpec> EmitDynamicUpdateSliceInPlace(const HloInstruction& instr,
                                                   const DeviceSpec& device,
                                                   const KernelConfig& config) {
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  const int64_t k_dus = InPlaceDusOutput(view);
  if (k_dus < 0)
    return Unimplemented("in-place dynamic-update-slice: %", instr.name(),
                         " is not one dynamic-update-slice of a parameter (with outputs of its update's "
                         "dimensions)");
  const HloInstruction& dus = *view.outputs[k_dus].value;
  const HloInstruction* target = dus.operand(0);
  int64_t operand = -1;
  for (size_t i = 0; i < view.leaves.size(); ++i)
    if (view.leaves[i] == target) operand = static_cast<int64_t>(i);
  if (operand < 0)
    return Unimplemented("in-place dynamic-update-slice: the updated array of %", instr.name(),
                         " is computed, not a parameter");
  // The target may be read only by the update itself at the written positions; to be safe, it
  // may have no other use at all.
  if (target->user_count() != 1 || (view.computation == nullptr && instr.operand_count() > 0 &&
                                     std::count(instr.operands().begin(), instr.operands().end(), target) > 1))
    return Unimplemented("in-place dynamic-update-slice: %", instr.name(),
                         " also reads the array it updates");
  const Shape& out_shape = view.outputs[k_dus].shape;
  const HloInstruction& update = *dus.operand(1);
  const Shape update_shape = WithLayout(update.shape());
  KernelConfig c = config;
  if (c.block_size == 0) c.block_size = 256;
  if (c.vector_width == 0) {
    int bytes = StorageBytes(update_shape.element_type());
    for (const KernelOutput& o : view.outputs) bytes = std::max(bytes, StorageBytes(o.shape.element_type()));
    int v = std::max(1, 16 / std::max(1, bytes));
    std::vector<int64_t> m2m = MinorToMajor(update_shape);
    int64_t minor = 1;
    for (int64_t d : m2m)
      if (update_shape.dimensions(d) != 1) {
        minor = update_shape.dimensions(d);
        break;
      }
    while (v > 1 && minor % v != 0) v /= 2;
    c.vector_width = std::min(v, 8);
  }
  if (c.unroll == 0) c.unroll = 1;
  if (c.block_size < 32 || c.block_size > device.max_threads_per_block || c.block_size % 32 != 0 ||
      c.vector_width < 1 || c.vector_width > 16 || (c.vector_width & (c.vector_width - 1)) != 0 ||
      c.unroll != 1)
    return InvalidArgument("in-place dynamic-update-slice: bad config ", c.ToString());
  const int B = c.block_size, V = c.vector_width;
  const int64_t n = update_shape.num_elements();
  if (n == 0) return Unimplemented("in-place dynamic-update-slice: empty update");
  const int64_t full = n / V;
  const bool tail = n % V != 0;
  const int64_t grid = std::max<int64_t>(1, CeilDiv(CeilDiv(n, V), B));

  KernelAssembler ka(view, "dus_in_place", c, device.dialect);
  ka.SetInPlace(k_dus, operand);
  CodeBuilder code(ka.index_type());
  ElementalEmitter em(ka.source(), code);
  ka.BindLeaves(em);
  const std::string it = code.index_type();
  code.Comment("Writes only the update window of " + out_shape.ToString() +
               " (the rest of the buffer already holds operand " + std::to_string(operand) + ")" +
               (view.outputs.size() > 1 ? ", and the other outputs at the window's elements." : "."));
  code.Line("const " + it + " vector_index = (" + it + ")blockIdx.x * " + std::to_string(B) + " + threadIdx.x;");
  code.DeclareVar("vector_index", 0, 0, grid * B - 1);
  auto body = [&](const IExpr& linear) -> Status {
    Index ui = em.Delinearize(linear, update_shape);
    // The other outputs first, at the window element's index (size-1 dimensions at 0): a
    // reshape between them and the update maps indices the same way, so the update reuses
    // their values (the emitter's cache) instead of computing them again.
    std::vector<IExpr> window;
    for (int64_t d = 0; d < update_shape.rank(); ++d)
      if (update_shape.dimensions(d) != 1) window.push_back(ui.dims[d]);
    for (size_t k = 0; k < view.outputs.size(); ++k) {
      if (static_cast<int64_t>(k) == k_dus) continue;
      const KernelOutput& o = view.outputs[k];
      Index oi;
      size_t w = 0;
      for (int64_t d = 0; d < o.shape.rank(); ++d)
        oi.dims.push_back(o.shape.dimensions(d) == 1 ? IExpr(0) : window[w++]);
      KILN_ASSIGN_OR_RETURN(Value v, em.Emit(*o.value, oi));
      code.Line(ka.output_pointer(k) + "[" + code.Render(em.Offset(o.shape, oi)) + "] = " +
                StoreConvert(o.shape.element_type(), v.expr) + ";");
    }
    KILN_ASSIGN_OR_RETURN(Value v, em.Emit(update, ui));
    // Start indices, clamped as dynamic-update-slice does.
    std::vector<int64_t> sizes = update_shape.dimensions();
    Index oi;
    for (int64_t d = 0; d < out_shape.rank(); ++d) {
      int64_t hi = std::max<int64_t>(0, out_shape.dimensions(d) - sizes[d]);
      KILN_ASSIGN_OR_RETURN(Value s, em.Emit(*dus.operand(2 + d), Index{}));
      IExpr start = hi == 0 ? IExpr(0)
                            : code.DefineVar("start" + std::to_string(d),
                                             "(" + it + ")(" + s.expr + " < 0 ? 0 : (" + s.expr + " > " +
                                                 std::to_string(hi) + " ? " + std::to_string(hi) + " : " +
                                                 s.expr + "))",
                                             {}, 0, hi, 1, em.DepthOf(s));
      oi.dims.push_back(start + ui.dims[d]);
    }
    IExpr off = em.Offset(out_shape, oi);
    code.Line(ka.output_pointer(k_dus) + "[" + code.Render(off) + "] = " +
              StoreConvert(out_shape.element_type(), v.expr) + ";");
    return OkStatus();
  };
  if (dus.operand_count() != 2 + out_shape.rank())
    return Unimplemented("in-place dynamic-update-slice: %", dus.name(), " uses the vector start form");
  for (int64_t d = 0; d < out_shape.rank(); ++d)
    if (!IsIntegralType(dus.operand(2 + d)->shape().element_type()))
      return InvalidArgument("dynamic-update-slice %", dus.name(), ": non-integer start");
  if (full > 0) {
    code.Open("if (vector_index < " + code.IndexLiteral(full) + ")", BlockKind::kConditional);
    IExpr vi = DeclareIndex(code, "vector", "vector_index", 0, full - 1);
    IExpr linear = vi * V;
    if (V > 1) {
      code.Open("for (int lane = 0; lane < " + std::to_string(V) + "; ++lane)", BlockKind::kLoop,
                "#pragma unroll");
      LaneContext lane{code.DeclareVar("lane", code.depth(), 0, V - 1), V, code.depth()};
      em.SetLane(lane);
      linear = linear + IExpr::Var(lane.var);
    }
    KILN_RETURN_IF_ERROR(body(linear));
    if (V > 1) code.Close();
    em.SetLane(LaneContext{});
    code.Close();
  }
  if (tail) {
    code.Open("if (vector_index == " + code.IndexLiteral(full) + ")", BlockKind::kConditional);
    code.Open("for (" + it + " e = " + code.IndexLiteral(full * V) + "; e < " + code.IndexLiteral(n) + "; ++e)",
              BlockKind::kLoop);
    KILN_RETURN_IF_ERROR(body(IExpr::Var(code.DeclareVar("e", code.depth(), full * V, n - 1))));
    code.Close();
    code.Close();
  }
  KILN_ASSIGN_OR_RETURN(std::string text, code.Finish());
  std::string entry = "dus_" + SanitizeIdentifier(instr.name());
  ka.AddEntry(entry, B, text);
  ka.NoteReads(em);
  runtime::LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(grid);
  dims.block.x = static_cast<uint32_t>(B);
  ka.AddLaunch(entry, dims);
  return ka.Finish();
}

}  // namespace kiln::codegen
