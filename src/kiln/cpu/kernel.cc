// CreateCpuKernel: picks the kernel family for an instruction (see kernel.h).
#include "kiln/cpu/kernel.h"

#include "kiln/cpu/kernels/kernels.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu {

namespace {

using namespace internal;  // NOLINT

bool IsLoopOp(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kMap:
    case HloOpcode::kRng:
      return false;
    case HloOpcode::kBroadcast: case HloOpcode::kReshape: case HloOpcode::kIota:
    case HloOpcode::kSlice: case HloOpcode::kPad: case HloOpcode::kConcatenate:
    case HloOpcode::kDynamicSlice: case HloOpcode::kReverse: case HloOpcode::kCopy:
    case HloOpcode::kConvert: case HloOpcode::kConstant: case HloOpcode::kBitcast:
      return true;
    case HloOpcode::kBitcastConvert:
      return instr.operand_count() == 1 &&
             instr.shape().dimensions() == instr.operand(0)->shape().dimensions();
    default:
      return instr.IsElementwise();
  }
}

StatusOr<std::unique_ptr<CpuKernel>> CreateFamilyKernel(const HloInstruction& instr,
                                                        const CpuKernelOptions& options) {
  switch (instr.opcode()) {
    case HloOpcode::kFusion: {
      if (!instr.fused_computation()) return InvalidArgument("fusion without a computation");
      const HloInstruction* root = instr.fused_computation()->root_instruction();
      switch (instr.attrs().fusion_kind) {
        case FusionKind::kLoop:
          if (root->opcode() == HloOpcode::kDynamicUpdateSlice)
            return CreateDynamicUpdateSliceKernel(instr, options);
          return CreateLoopKernel(instr, options);
        case FusionKind::kInput: {
          bool has_reduce = root->opcode() == HloOpcode::kReduce;
          if (root->opcode() == HloOpcode::kTuple)
            for (const HloInstruction* op : root->operands())
              has_reduce |= op->opcode() == HloOpcode::kReduce;
          if (has_reduce) return CreateReduceKernel(instr, options);
          return CreateLoopKernel(instr, options);
        }
        default:
          return Unimplemented("fusion kind ", FusionKindString(instr.attrs().fusion_kind));
      }
    }
    case HloOpcode::kReduce: return CreateReduceKernel(instr, options);
    case HloOpcode::kTranspose: return CreateTransposeKernel(instr, options);
    case HloOpcode::kDot: return CreateDotKernel(instr, options);
    case HloOpcode::kConvolution: return CreateConvolutionKernel(instr, options);
    case HloOpcode::kGather: return CreateGatherKernel(instr, options);
    case HloOpcode::kScatter: return CreateScatterKernel(instr, options);
    case HloOpcode::kSort: return CreateSortKernel(instr, options);
    case HloOpcode::kTopK: return CreateTopKKernel(instr, options);
    case HloOpcode::kRngBitGenerator: return CreateRngBitGeneratorKernel(instr, options);
    case HloOpcode::kFft: return CreateFftKernel(instr, options);
    case HloOpcode::kCustomCall:
      if (instr.attrs().custom_call_target == "TopK") return CreateTopKKernel(instr, options);
      if (IsAttentionCall(instr)) return CreateAttentionKernel(instr, options);
      if (IsAttentionBackwardCall(instr)) return CreateAttentionBackwardKernel(instr, options);
      if (IsNativeLinalg(instr)) return CreateLinalgKernel(instr, options);
      return Unimplemented("no native kernel for custom-call ", instr.attrs().custom_call_target);
    case HloOpcode::kDynamicUpdateSlice: return CreateDynamicUpdateSliceKernel(instr, options);
    case HloOpcode::kReduceWindow: return CreateReduceWindowKernel(instr, options);
    case HloOpcode::kSelectAndScatter: return CreateSelectAndScatterKernel(instr, options);
    case HloOpcode::kCholesky: case HloOpcode::kTriangularSolve: return CreateLinalgKernel(instr, options);
    case HloOpcode::kBitcastConvert:
      if (IsLoopOp(instr)) return CreateLoopKernel(instr, options);
      return CreateBitcastConvertKernel(instr, options);
    case HloOpcode::kAllReduce: case HloOpcode::kAllReduceStart: case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart: case HloOpcode::kReduceScatter: case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute: case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kReplicaId: case HloOpcode::kPartitionId: case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kRaggedAllToAll: case HloOpcode::kSend: case HloOpcode::kRecv: case HloOpcode::kSendDone:
    case HloOpcode::kRecvDone: case HloOpcode::kAllReduceDone: case HloOpcode::kAllGatherDone:
    case HloOpcode::kCollectivePermuteDone:
      return CreateCollectiveKernel(instr, options);
    default:
      if (IsLoopOp(instr)) return CreateLoopKernel(instr, options);
      return Unimplemented("no native kernel for ", HloOpcodeString(instr.opcode()));
  }
}

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateCpuKernel(const HloInstruction& instr,
                                                     const CpuKernelOptions& options) {
  switch (instr.opcode()) {
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kCall:
    case HloOpcode::kParameter:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
      return FailedPrecondition(HloOpcodeString(instr.opcode()), " %", instr.name(),
                                " is run by the executable, not by a kernel");
    default:
      break;
  }
  StatusOr<std::unique_ptr<CpuKernel>> k = CreateFamilyKernel(instr, options);
  if (k.ok() || k.status().code() != StatusCode::kUnimplemented) return k;
  // Not covered natively (an opcode without a native kernel, or a form the family does not
  // handle, see kernels.h): the evaluator's kernel.
  return CreateEvaluatorFallbackKernel(instr);
}

}  // namespace kiln::cpu
