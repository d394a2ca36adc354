// The column-reduction emitter: reductions over major dimensions, [k1, r, k2] physically with
// k2 > 1 contiguous kept elements per reduced step.
//
// Thread mapping: a block of 32 x TY threads owns 32 * V adjacent columns (k2) of one k1 slice;
// thread (tx, ty) accumulates columns (xb * 32 + tx) * V + lane over rows ty, ty + TY, ... --
// every warp reads 32 * V contiguous elements per row (16-byte vectors). The TY partial sums of
// a column are then combined through shared memory (laid out [ty][lane][tx] with a padded row:
// no bank conflicts) by the threads of row ty == 0, which compute the epilogue and store the
// reduced outputs (vectorized across lanes when the output is contiguous).
//
// Split (config.split = S > 1): the rows are cut in S chunks, blockIdx.y picks one, partial
// results go to scratch and a second kernel (one thread per output element) folds them. For
// few columns over many rows (a [16384, 256] reduction has only 2 blocks' worth of columns).
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/emitters_internal.h"
#include "kiln/codegen/reduction_common.h"

namespace kiln::codegen {

StatusOr<KernelConfig> ResolveColumnConfig(const ReductionPlan& plan, const DeviceSpec& device,
                                           const KernelConfig& config) {
  const ReductionAnalysis& ra = plan.ra;
  KernelConfig c = config;
  if (c.vector_width == 0) {
    int bytes = 1;
    const int64_t n = ra.input_shape.num_elements();
    for (const HloInstruction* l : plan.view.leaves)
      if (l->shape().num_elements() >= n) bytes = std::max(bytes, StorageBytes(l->shape().element_type()));
    int v = std::max(1, std::min(8, 16 / bytes));
    while (v > 1 && (ra.k2 % v != 0 || ra.k2 < 32 * v / 2)) v /= 2;
    c.vector_width = v;
  }
  const int V = c.vector_width;
  if (V < 1 || V > 16 || (V & (V - 1)) != 0 || ra.k2 % V != 0)
    return InvalidArgument("column reduction: vector width ", V, " must be a power of two dividing ", ra.k2);
  if (c.block_size == 0) c.block_size = 256;
  if (c.block_size < 32 || c.block_size > device.max_threads_per_block || c.block_size % 32 != 0)
    return InvalidArgument("column reduction: block size ", c.block_size, " is not a multiple of 32");
  const int TY = c.block_size / 32;
  if (c.split == 0) {
    c.split = 1;
    const int64_t blocks = CeilDiv(ra.k2, 32 * V) * ra.k1;
    if (blocks < 2 * device.sm_count && ra.r >= 32 * TY)
      c.split = static_cast<int>(std::clamp<int64_t>(CeilDiv(2 * device.sm_count, blocks), 1,
                                                     std::min<int64_t>(1024, ra.r / (8 * TY))));
  }
  if (c.split < 1 || c.split > 65535 || c.split > ra.r)
    return InvalidArgument("column reduction: bad split ", c.split);
  if (c.unroll == 0) c.unroll = 4;
  if (c.unroll < 1 || c.unroll > 32) return InvalidArgument("column reduction: bad unroll ", c.unroll);
  int64_t shared = 0;
  for (const Hero& h : plan.heroes)
    for (PrimitiveType t : h.types) shared += int64_t{TY} * V * 33 * RegisterBytes(t);
  if (TY > 1 && shared > device.shared_memory_per_block)
    return InvalidArgument("column reduction: ", shared, " bytes of shared memory exceed the block limit");
  return c;
}

StatusOr<KernelSpec> EmitColumnReduction(const HloInstruction& instr, const DeviceSpec& device,
                                         const KernelConfig& config) {
  KILN_ASSIGN_OR_RETURN(ReductionPlan plan, MakeReductionPlan(instr));
  const ReductionAnalysis& ra = plan.ra;
  if (ra.is_row())
    return Unimplemented("column reduction: %", instr.name(), " reduces the minor dimensions; use the row reduction");
  if (plan.passes > 1)
    return Unimplemented("column reduction: %", instr.name(),
                         " reads a reduced value back into the reduced columns (needs a whole column per thread)");
  KILN_ASSIGN_OR_RETURN(KernelConfig c, ResolveColumnConfig(plan, device, config));
  const int V = c.vector_width, B = c.block_size, TY = B / 32, S = c.split;
  const int64_t K1 = ra.k1, R = ra.r, K2 = ra.k2;
  const int64_t XB = CeilDiv(K2, 32 * V);
  const int64_t chunk = CeilDiv(R, S);
  const bool col_guard = K2 % (32 * V) != 0;
  if (XB * K1 > INT32_MAX) return Unimplemented("column reduction: grid too large");

  KernelAssembler ka(plan.view, "column_reduction", c, device.dialect);
  const std::string base = SanitizeIdentifier(instr.name());
  CodeBuilder code(ka.index_type());
  ElementalEmitter em(ka.source(), code);
  ka.BindLeaves(em);
  const std::string it = code.index_type();
  code.Comment("Columns of " + ra.input_shape.ToString() + " reduced over {" + StrJoin(ra.reduced_dims, ",") +
               "} as [" + std::to_string(K1) + ", " + std::to_string(R) + ", " + std::to_string(K2) +
               "]: 32 x " + std::to_string(TY) + " threads per block own " + std::to_string(32 * V) +
               " columns; vectors of " + std::to_string(V) + (S > 1 ? ", rows split in " + std::to_string(S) : "") + ".");
  const int tx = DeclareThreadVar(code, "tx", "threadIdx.x & 31", 31);
  DeclareThreadVar(code, "ty", "threadIdx.x >> 5", TY - 1);
  IExpr k1(0);
  std::string xb_code = "(" + it + ")blockIdx.x";
  if (K1 > 1) {
    k1 = IExpr::Var(DeclareThreadVar(code, "k1", "(" + it + ")blockIdx.x / " + std::to_string(XB), K1 - 1));
    xb_code = "(" + it + ")blockIdx.x % " + std::to_string(XB);
  }
  const int xb = DeclareThreadVar(code, "xb", xb_code, XB - 1);
  IExpr col0 = (IExpr::Var(xb) * 32 + IExpr::Var(tx)) * V;
  std::string r_begin = "ty", r_end = code.IndexLiteral(R);
  if (S > 1) {
    DeclareThreadVar(code, "split", "(" + it + ")blockIdx.y", S - 1);
    r_begin = "split * " + code.IndexLiteral(chunk) + " + ty";
    r_end = "min(" + code.IndexLiteral(R) + ", (split + 1) * " + code.IndexLiteral(chunk) + ")";
  }
  em.SetOverride(HeroOverride(&plan.heroes, nullptr));
  KILN_RETURN_IF_ERROR(DeclareAccumulators(em, plan.heroes, 1, V));
  if (col_guard) code.Open("if (" + code.Render(col0) + " < " + code.IndexLiteral(K2) + ")", BlockKind::kConditional);
  code.Open("for (" + it + " r = " + r_begin + "; r < " + r_end + "; r += " + std::to_string(TY) + ")",
            BlockKind::kLoop, "#pragma unroll " + std::to_string(c.unroll));
  const int r = code.DeclareVar("r", code.depth(), 0, R - 1);
  std::vector<size_t> outs;
  for (size_t k = 0; k < plan.view.outputs.size(); ++k)
    if (plan.output_in_input_space[k]) outs.push_back(k);
  {
    LaneContext lane;
    IExpr col = col0;
    if (V > 1) {
      code.Open("for (int lane = 0; lane < " + std::to_string(V) + "; ++lane)", BlockKind::kLoop, "#pragma unroll");
      lane = LaneContext{code.DeclareVar("lane", code.depth(), 0, V - 1), V, code.depth()};
      col = col + IExpr::Var(lane.var);
      em.SetLane(lane);
    }
    std::vector<IExpr> kept = KeptDims(code, ra, k1, col);
    Index index = ReductionInputIndex(code, ra, kept, k1, IExpr::Var(r), col);
    KILN_RETURN_IF_ERROR(Accumulate(em, plan.heroes, 1, index, V > 1 ? "lane" : "0"));
    std::vector<StorePlan> plans(outs.size());
    for (size_t j = 0; j < outs.size(); ++j) {
      const KernelOutput& o = plan.view.outputs[outs[j]];
      plans[j] = PlanStore(em, ka.output_pointer(outs[j]), o.shape, index, o.value->name());
      Value v;
      if (o.tuple_index >= 0) {
        KILN_ASSIGN_OR_RETURN(std::vector<Value> t, em.EmitTuple(*o.value, index));
        v = t[o.tuple_index];
      } else {
        KILN_ASSIGN_OR_RETURN(v, em.Emit(*o.value, index));
      }
      EmitStore(em, plans[j], ka.output_pointer(outs[j]), o.shape, index, v);
    }
    if (V > 1) {
      code.Close();
      em.SetLane(LaneContext{});
      for (size_t j = 0; j < outs.size(); ++j)
        FinishStore(code, plans[j], ka.output_pointer(outs[j]), plan.view.outputs[outs[j]].shape, V);
    }
  }
  code.Close();  // r
  if (col_guard) code.Close();

  // Combine the TY partial results of each column through shared memory.
  if (TY > 1) {
    std::vector<std::pair<Hero*, std::vector<std::string>>> shared;
    for (Hero& h : plan.heroes) {
      std::vector<std::string> names;
      for (int64_t k = 0; k < h.n; ++k) {
        std::string sm = code.UniqueName(h.reduce->name() + "_rows");
        code.Line("__shared__ " + RegisterType(h.types[k]) + " " + sm + "[" + std::to_string(TY * V * 33) + "];");
        names.push_back(sm);
      }
      shared.push_back({&h, names});
    }
    code.Open("for (int l = 0; l < " + std::to_string(V) + "; ++l)", BlockKind::kLoop, "#pragma unroll");
    for (auto& [h, names] : shared)
      for (int64_t k = 0; k < h->n; ++k)
        code.Line(names[k] + "[(ty * " + std::to_string(V) + " + l) * 33 + tx] = " + h->acc[k] + "[l];");
    code.Close();
    code.Line("__syncthreads();");
    code.Open("if (ty == 0)", BlockKind::kConditional);
    code.Open("for (int l = 0; l < " + std::to_string(V) + "; ++l)", BlockKind::kLoop, "#pragma unroll");
    code.Open("for (int t = 1; t < " + std::to_string(TY) + "; ++t)", BlockKind::kLoop, "#pragma unroll");
    for (auto& [h, names] : shared) {
      std::vector<std::string> a, b;
      for (int64_t k = 0; k < h->n; ++k) {
        a.push_back(h->acc[k] + "[l]");
        b.push_back(names[k] + "[(t * " + std::to_string(V) + " + l) * 33 + tx]");
      }
      KILN_RETURN_IF_ERROR(ApplyReducer(em, *h, a, b));
    }
    code.Close();
    code.Close();
    code.Close();
  }

  int64_t scratch_bytes = 0;
  std::vector<int64_t> offsets;
  for (const Hero& h : plan.heroes)
    for (int64_t k = 0; k < h.n; ++k) {
      offsets.push_back(scratch_bytes);
      scratch_bytes += CeilDiv(int64_t{S} * K1 * K2 * RegisterBytes(h.types[k]), 16) * 16;
    }
  std::string scratch;
  if (S > 1) scratch = ka.AddScratch(scratch_bytes);
  std::string guard = "ty == 0";
  if (col_guard) guard += " && " + code.Render(col0) + " < " + code.IndexLiteral(K2);
  code.Open("if (" + guard + ")", BlockKind::kConditional);
  {
    LaneContext lane;
    IExpr col = col0;
    std::string lane_name = "0";
    if (V > 1) {
      code.Open("for (int lane = 0; lane < " + std::to_string(V) + "; ++lane)", BlockKind::kLoop, "#pragma unroll");
      lane = LaneContext{code.DeclareVar("lane", code.depth(), 0, V - 1), V, code.depth()};
      col = col + IExpr::Var(lane.var);
      em.SetLane(lane);
      lane_name = "lane";
    }
    if (S > 1) {
      size_t slot = 0;
      for (const Hero& h : plan.heroes)
        for (int64_t k = 0; k < h.n; ++k, ++slot)
          code.Line("reinterpret_cast<" + RegisterType(h.types[k]) + "*>(" + scratch + " + " +
                    std::to_string(offsets[slot]) + ")[(split * " + code.IndexLiteral(K1) + " + " +
                    code.Render(k1) + ") * " + code.IndexLiteral(K2) + " + " + code.Render(col) +
                    "] = " + h.acc[k] + "[" + lane_name + "];");
    } else {
      std::vector<IExpr> kept = KeptDims(code, ra, k1, col);
      Index out_index = ReductionOutputIndex(ra, Index{kept, std::nullopt, nullptr});
      for (Hero& h : plan.heroes) {
        h.result.clear();
        for (int64_t k = 0; k < h.n; ++k)
          h.result.push_back(Value{h.acc[k] + "[" + lane_name + "]", h.types[k], code.BlockIdAt(code.depth())});
        h.done = true;
      }
      em.SetOverride(HeroOverride(&plan.heroes, &out_index.dims));
      std::vector<size_t> routs;
      for (size_t k = 0; k < plan.view.outputs.size(); ++k)
        if (!plan.output_in_input_space[k]) routs.push_back(k);
      std::vector<StorePlan> plans(routs.size());
      for (size_t j = 0; j < routs.size(); ++j) {
        const KernelOutput& o = plan.view.outputs[routs[j]];
        plans[j] = PlanStore(em, ka.output_pointer(routs[j]), o.shape, out_index, o.value->name());
        Value v;
        if (o.tuple_index >= 0) {
          KILN_ASSIGN_OR_RETURN(std::vector<Value> t, em.EmitTuple(*o.value, out_index));
          v = t[o.tuple_index];
        } else {
          KILN_ASSIGN_OR_RETURN(v, em.Emit(*o.value, out_index));
        }
        EmitStore(em, plans[j], ka.output_pointer(routs[j]), o.shape, out_index, v);
      }
      if (V > 1) {
        code.Close();
        em.SetLane(LaneContext{});
        for (size_t j = 0; j < routs.size(); ++j)
          FinishStore(code, plans[j], ka.output_pointer(routs[j]), plan.view.outputs[routs[j]].shape, V);
      }
    }
    if (S > 1 && V > 1) {
      code.Close();
      em.SetLane(LaneContext{});
    }
  }
  code.Close();
  KILN_ASSIGN_OR_RETURN(std::string body, code.Finish());
  const std::string entry = "column_reduce_" + base + (S > 1 ? "_partial" : "");
  ka.AddEntry(entry, B, body);
  ka.NoteReads(em);
  runtime::LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(XB * K1);
  dims.grid.y = static_cast<uint32_t>(S);
  dims.block.x = static_cast<uint32_t>(B);
  ka.AddLaunch(entry, dims);

  if (S > 1) {
    constexpr int kThreads = 256;
    CodeBuilder fin(ka.index_type());
    ElementalEmitter fem(ka.source(), fin);
    ka.BindLeaves(fem);
    const int64_t total = K1 * K2;
    fin.Comment("Folds the " + std::to_string(S) + " partial results of each column: one thread per column.");
    const int idx = DeclareThreadVar(fin, "column", "(" + it + ")blockIdx.x * " + std::to_string(kThreads) + " + threadIdx.x",
                                     CeilDiv(total, kThreads) * kThreads - 1);
    fin.Open("if (column < " + fin.IndexLiteral(total) + ")", BlockKind::kConditional);
    IExpr fk1 = K1 > 1 ? fin.Div(IExpr::Var(idx), K2, "k1") : IExpr(0);
    IExpr fcol = fin.Mod(IExpr::Var(idx), K2, "col");
    for (Hero& h : plan.heroes) h.done = false;
    KILN_RETURN_IF_ERROR(DeclareAccumulators(fem, plan.heroes, -1, 1));
    fin.Open("for (int s = 0; s < " + std::to_string(S) + "; ++s)", BlockKind::kLoop, "#pragma unroll 4");
    size_t slot = 0;
    for (Hero& h : plan.heroes) {
      std::vector<std::string> a, b;
      for (int64_t k = 0; k < h.n; ++k, ++slot) {
        a.push_back(h.acc[k] + "[0]");
        b.push_back("reinterpret_cast<const " + RegisterType(h.types[k]) + "*>(" + scratch + " + " +
                    std::to_string(offsets[slot]) + ")[s * " + fin.IndexLiteral(total) + " + column]");
      }
      KILN_RETURN_IF_ERROR(ApplyReducer(fem, h, a, b));
    }
    fin.Close();
    std::vector<IExpr> kept = KeptDims(fin, ra, fk1, fcol);
    Index out_index = ReductionOutputIndex(ra, Index{kept, std::nullopt, nullptr});
    for (Hero& h : plan.heroes) {
      h.result.clear();
      for (int64_t k = 0; k < h.n; ++k) h.result.push_back(Value{h.acc[k] + "[0]", h.types[k], fin.BlockIdAt(fin.depth())});
      h.done = true;
    }
    fem.SetOverride(HeroOverride(&plan.heroes, &out_index.dims));
    for (size_t k = 0; k < plan.view.outputs.size(); ++k) {
      if (plan.output_in_input_space[k]) continue;
      const KernelOutput& o = plan.view.outputs[k];
      Value v;
      if (o.tuple_index >= 0) {
        KILN_ASSIGN_OR_RETURN(std::vector<Value> t, fem.EmitTuple(*o.value, out_index));
        v = t[o.tuple_index];
      } else {
        KILN_ASSIGN_OR_RETURN(v, fem.Emit(*o.value, out_index));
      }
      EmitStore(fem, StorePlan{}, ka.output_pointer(k), o.shape, out_index, v);
    }
    fin.Close();
    KILN_ASSIGN_OR_RETURN(std::string fbody, fin.Finish());
    const std::string fentry = "column_reduce_" + base + "_final";
    ka.AddEntry(fentry, kThreads, fbody);
    ka.NoteReads(fem);
    runtime::LaunchDims fdims;
    fdims.grid.x = static_cast<uint32_t>(CeilDiv(total, kThreads));
    fdims.block.x = kThreads;
    ka.AddLaunch(fentry, fdims);
  }
  return ka.Finish();
}

}  // namespace kiln::codegen
