#include "kiln/cuda/compiler/kernel_thunk.h"

#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"

namespace kiln::cuda {

KernelThunk::KernelThunk(std::string name, codegen::KernelSpec spec, std::string cubin,
                         std::vector<BufferSlice> operands, std::vector<BufferSlice> outputs)
    : GpuThunk(Kind::kKernel, std::move(name), spec.min_bytes, 0),
      spec_(std::move(spec)),
      cubin_(std::move(cubin)),
      operands_(std::move(operands)),
      outputs_(std::move(outputs)) {}

std::string KernelThunk::ToString() const {
  return StrCat("kernel %", name(), " ", spec_.emitter, " ", spec_.config.ToString(), " (", spec_.launches.size(),
                " launch", spec_.launches.size() == 1 ? "" : "es", ")");
}

Status KernelThunk::Initialize(const ThunkInitParams& params) {
  if (module_) return OkStatus();
  KILN_ASSIGN_OR_RETURN(module_, params.device->LoadModule(runtime::ModuleSpec::FromCubin(cubin_, spec_.name)));
  for (const codegen::KernelLaunch& l : spec_.launches) {
    KILN_ASSIGN_OR_RETURN(runtime::Kernel * k, module_->GetKernel(l.entry));
    if (l.dims.shared_memory_bytes > 48 * 1024) KILN_RETURN_IF_ERROR(k->SetMaxDynamicSharedMemory(l.dims.shared_memory_bytes));
    kernels_.push_back(k);
  }
  for (const codegen::KernelParam& p : spec_.params) {
    if (p.kind == codegen::KernelParam::Kind::kOperand && (p.index < 0 || p.index >= static_cast<int64_t>(operands_.size())))
      return Internal("kernel %", name(), ": parameter ", p.name, " names operand ", p.index, " of ", operands_.size());
    if (p.kind == codegen::KernelParam::Kind::kOutput && (p.index < 0 || p.index >= static_cast<int64_t>(outputs_.size())))
      return Internal("kernel %", name(), ": parameter ", p.name, " names output ", p.index, " of ", outputs_.size());
  }
  return OkStatus();
}

Status KernelThunk::Execute(const ThunkExecuteParams& params) const {
  runtime::Stream& stream = *params.stream;
  // In-place outputs: the output buffer must hold the operand's value first.
  std::vector<int64_t> in_place_output(operands_.size(), -1);
  for (const auto& [out, op] : spec_.in_place) {
    in_place_output[op] = out;
    if (outputs_[out] == operands_[op]) continue;
    runtime::DeviceMemory dst = params.buffers->Get(outputs_[out]);
    runtime::DeviceMemory src = params.buffers->Get(operands_[op]);
    if (dst.size > 0) KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(dst, src, dst.size));
  }
  runtime::KernelArgs args;
  for (const codegen::KernelParam& p : spec_.params) {
    switch (p.kind) {
      case codegen::KernelParam::Kind::kOperand: {
        const int64_t out = in_place_output[p.index];
        args.Add(params.buffers->Get(out >= 0 ? outputs_[out] : operands_[p.index]).ptr);
        break;
      }
      case codegen::KernelParam::Kind::kOutput:
        args.Add(params.buffers->Get(outputs_[p.index]).ptr);
        break;
      case codegen::KernelParam::Kind::kScratch:
        args.Add(params.workspace.ptr);
        break;
      case codegen::KernelParam::Kind::kScalar:
        switch (p.scalar_type) {
          case PrimitiveType::kS32: args.Add(static_cast<int32_t>(p.scalar_value)); break;
          case PrimitiveType::kU32: args.Add(static_cast<uint32_t>(p.scalar_value)); break;
          case PrimitiveType::kU64: args.Add(static_cast<uint64_t>(p.scalar_value)); break;
          default: args.Add(static_cast<int64_t>(p.scalar_value)); break;
        }
        break;
    }
  }
  for (size_t i = 0; i < kernels_.size(); ++i)
    KILN_RETURN_IF_ERROR(stream.Launch(*kernels_[i], spec_.launches[i].dims, args));
  return OkStatus();
}

}  // namespace kiln::cuda
