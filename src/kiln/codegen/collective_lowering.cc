#include "kiln/codegen/collective_lowering.h"

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/kernel_source.h"
#include "kiln/eval/collective_ops.h"
#include "kiln/eval/communicator.h"
#include "kiln/hlo/computation.h"

namespace kiln::codegen {

namespace {

std::string IndexType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kS32: return "int";
    case PrimitiveType::kU32: return "unsigned int";
    case PrimitiveType::kU64: return "unsigned long long";
    default: return "long long";
  }
}

bool NativeOp(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllReduce: case HloOpcode::kAllGather: case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll: case HloOpcode::kCollectivePermute: case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kReplicaId: case HloOpcode::kPartitionId: case HloOpcode::kSend: case HloOpcode::kRecv:
    case HloOpcode::kRaggedAllToAll:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool NcclApiReducesType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kPred: case PrimitiveType::kU8: case PrimitiveType::kS8: case PrimitiveType::kS32:
    case PrimitiveType::kU32: case PrimitiveType::kS64: case PrimitiveType::kU64: case PrimitiveType::kF16:
    case PrimitiveType::kF32: case PrimitiveType::kF64: case PrimitiveType::kBF16:
      return true;
    default:
      return false;
  }
}

bool NcclReduces(const HloInstruction& op_instr) {
  if (op_instr.called_computations().empty()) return false;
  const std::optional<ReductionKind> r = MatchReduction(*op_instr.called_computations()[0]);
  if (!r) return false;
  for (const HloInstruction* o : op_instr.operands()) {
    const PrimitiveType t = o->shape().element_type();
    const bool complex = t == PrimitiveType::kC64 || t == PrimitiveType::kC128;
    if (complex && *r != ReductionKind::kSum) return false;
    if (!complex && !NcclApiReducesType(t)) return false;
  }
  return true;
}

bool IsCollectiveThunkOp(const HloInstruction& instr) {
  const HloOpcode op = instr.opcode();
  if (op == HloOpcode::kAsyncStart) return IsCollectiveOpcode(UnwrapAsyncCollective(instr).opcode());
  if (op == HloOpcode::kSend || op == HloOpcode::kRecv) return !instr.attrs().is_host_transfer;
  return IsCollectiveOpcode(op) || op == HloOpcode::kReplicaId || op == HloOpcode::kPartitionId;
}

bool IsCollectiveDoneOp(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kAllReduceDone: case HloOpcode::kAllGatherDone: case HloOpcode::kCollectivePermuteDone:
      return true;
    case HloOpcode::kSendDone: case HloOpcode::kRecvDone:
      return !instr.attrs().is_host_transfer;
    case HloOpcode::kAsyncDone: case HloOpcode::kAsyncUpdate: {
      const HloInstruction* start = &instr;
      while (start->opcode() != HloOpcode::kAsyncStart && start->operand_count() == 1) start = start->operand(0);
      return start->opcode() == HloOpcode::kAsyncStart && IsCollectiveOpcode(UnwrapAsyncCollective(*start).opcode());
    }
    default:
      return false;
  }
}

Status CollectiveThunkApplies(const HloInstruction& instr) {
  const HloInstruction& op_instr = UnwrapAsyncCollective(instr);
  const HloOpcode op = CollectiveSyncOpcode(op_instr.opcode());
  if (!NativeOp(op)) return Unimplemented(HloOpcodeString(op), " has no NCCL / RCCL implementation");
  if (instr.attrs().is_host_transfer) return Unimplemented("a host transfer");
  for (const HloInstruction* o : op_instr.operands())
    if (!o->shape().IsArray() && !o->shape().IsToken()) return Unimplemented("a collective of tuple operands");
  // A reduction NCCL lacks is gathered and combined on the device (Note [Reductions NCCL
  // lacks]); whether the computation has a device form is the kernel's compile to say.
  if ((op == HloOpcode::kAllReduce || op == HloOpcode::kReduceScatter) && op_instr.called_computations().empty())
    return Unimplemented("no reduction computation");
  if (op == HloOpcode::kRaggedAllToAll && op_instr.operand_count() != 6) return Unimplemented("a malformed ragged-all-to-all");
  if (IsInPlaceCollectivePermute(instr)) return Unimplemented("the in-place collective-permute");
  return OkStatus();
}

std::string CombineEntry(int64_t operand) { return StrCat("kiln_combine_", operand); }

StatusOr<std::optional<CollectiveKernelSource>> CollectiveKernelsFor(const HloInstruction& op, bool device_reduction,
                                                                     GpuDialect dialect) {
  const char* ext = dialect == GpuDialect::kHip ? ".hip" : ".cu";
  const std::string& prelude = dialect == GpuDialect::kHip ? CodegenHipPrelude() : CodegenPrelude();
  const HloOpcode code = op.opcode();
  if (code == HloOpcode::kRaggedAllToAll) {
    if (op.operand_count() != 6) return InvalidArgument("ragged-all-to-all %", op.name(), " takes 6 operands");
    for (int i = 2; i < 5; ++i)
      if (!op.operand(i)->shape().IsArray() || !IsIntegralType(op.operand(i)->shape().element_type()))
        return InvalidArgument("ragged-all-to-all %", op.name(), ": operand ", i, " must be an integer array");
    KernelSource ks(StrCat("ragged-all-to-all %", op.name(), " (Note [Ragged all-to-all on NCCL])"));
    const std::string i0 = IndexType(op.operand(2)->shape().element_type());
    const std::string i1 = IndexType(op.operand(3)->shape().element_type());
    const std::string i2 = IndexType(op.operand(4)->shape().element_type());
    ks.AddEntry(StrCat(R"(extern "C" __global__ void )", kRaggedEntry, R"((const unsigned char* __restrict__ inputs, long long input_bytes,
    const )", i0, R"(* __restrict__ input_offsets, const )", i1, R"(* __restrict__ sizes,
    const )", i2, R"(* __restrict__ output_offsets, long long entries, unsigned char* __restrict__ out, int n, int per,
    int rank, long long input_rows, long long output_rows, long long row_bytes) {
  const int s = blockIdx.y / per, u = blockIdx.y % per;
  const long long e = (long long)s * entries + (long long)rank * per + u;
  const long long io = (long long)input_offsets[e], size = (long long)sizes[e], oo = (long long)output_offsets[e];
  if (size <= 0 || io < 0 || io + size > input_rows || oo < 0 || oo + size > output_rows) return;
  const unsigned char* src = inputs + (long long)s * input_bytes + io * row_bytes;
  unsigned char* dst = out + oo * row_bytes;
  const long long bytes = size * row_bytes;
  for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < bytes; b += (long long)gridDim.x * blockDim.x)
    dst[b] = src[b];
}
)"));
    CollectiveKernelSource out;
    out.name = StrCat("kiln_ragged_", op.name(), ext);
    out.source = ks.Render();
    out.headers = {{CodegenPreludeName(), prelude}};
    return std::optional<CollectiveKernelSource>(std::move(out));
  }
  if (!device_reduction || (code != HloOpcode::kAllReduce && code != HloOpcode::kReduceScatter &&
                            code != HloOpcode::kAllReduceStart))
    return std::optional<CollectiveKernelSource>();
  if (op.called_computations().empty()) return InvalidArgument(HloOpcodeString(code), " %", op.name(), " has no to_apply");
  const HloComputation& f = *op.called_computations()[0];
  KernelSource ks(StrCat(HloOpcodeString(code), " %", op.name(), " combining with ", f.name(),
                                  " (Note [Reductions NCCL lacks])"));
  KILN_ASSIGN_OR_RETURN(const ScalarFunction* fn, ks.Function(f));
  if (fn->tuple_result || fn->params.size() != 2 || fn->results.size() != 1)
    return Unimplemented("the reduction computation ", f.name(), " is not a binary scalar function");
  for (int64_t k = 0; k < op.operand_count(); ++k) {
    const Shape& s = op.operand(k)->shape();
    if (!s.IsArray()) return Unimplemented("a collective of tuple operands");
    const PrimitiveType t = s.element_type();
    if (fn->params[0] != t || fn->params[1] != t || fn->results[0] != t)
      return InvalidArgument(HloOpcodeString(code), " %", op.name(), ": the reduction computation ", f.name(),
                             " does not take and return two ", PrimitiveTypeName(t), " scalars");
    if (SubByteBits(t) > 0) return Unimplemented("a device reduction of ", PrimitiveTypeName(t));
    const std::string S = StorageType(t), R = RegisterType(t);
    ks.AddEntry(StrCat(R"(extern "C" __global__ void )", CombineEntry(k), "(const ", S, "* __restrict__ all, ", S,
                       R"(* __restrict__ out, long long count,
    long long stride, long long offset, int n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  )", R, " acc = ", LoadConvert(t, "all[offset + i]"), R"(;
  for (int r = 1; r < n; ++r) {
    const )", R, " x = ", LoadConvert(t, "all[(long long)r * stride + offset + i]"), R"(;
    acc = )", fn->name, R"((acc, x);
  }
  out[i] = )", StoreConvert(t, "acc"), R"(;
}
)"));
  }
  CollectiveKernelSource out;
  out.name = StrCat("kiln_combine_", op.name(), ext);
  out.source = ks.Render();
  out.headers = {{CodegenPreludeName(), prelude}};
  return std::optional<CollectiveKernelSource>(std::move(out));
}

}  // namespace kiln::codegen
