// Test helpers joining codegen/ and the CUDA room: running one generated kernel on a device
// against host literals. Test code only.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kiln/codegen/compile_kernels.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/cuda/nvrtc_kernel_compiler.h"
#include "kiln/hlo/literal.h"
#include "kiln/runtime/allocator.h"
#include "kiln/runtime/device.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/module.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda::testing {

using cuda::NvrtcKernelCompiler;

// Physical offsets (in elements) of each logical row-major element of `shape`.
inline std::vector<int64_t> PhysicalOffsets(const Shape& shape) {
  const int64_t n = shape.num_elements();
  std::vector<int64_t> strides = codegen::PhysicalStrides(shape);
  std::vector<int64_t> out(n);
  std::vector<int64_t> idx(shape.rank(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < shape.rank(); ++d) off += idx[d] * strides[d];
    out[i] = off;
    for (int64_t d = shape.rank() - 1; d >= 0; --d) {
      if (++idx[d] < shape.dimensions(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Literal (logical order) -> bytes in `shape`'s layout, and back.
inline std::vector<uint8_t> ToPhysical(const Literal& literal, const Shape& shape) {
  const int w = PrimitiveByteWidth(shape.element_type());
  std::vector<uint8_t> out(literal.size_bytes());
  std::vector<int64_t> offsets = PhysicalOffsets(shape);
  for (size_t i = 0; i < offsets.size(); ++i)
    std::memcpy(&out[offsets[i] * w], literal.untyped_data() + i * w, w);
  return out;
}
inline Literal FromPhysical(const std::vector<uint8_t>& bytes, const Shape& shape) {
  Literal l(shape);
  const int w = PrimitiveByteWidth(shape.element_type());
  std::vector<int64_t> offsets = PhysicalOffsets(shape);
  for (size_t i = 0; i < offsets.size(); ++i)
    std::memcpy(l.untyped_data() + i * w, &bytes[offsets[i] * w], w);
  return l;
}

// Runs `kernel` (compiled to `cubin`) on `device` with `args` (one literal per operand, logical
// order); returns the outputs (a tuple literal when the kernel has several, else the array).
inline StatusOr<Literal> RunKernel(runtime::Device& device, runtime::Stream& stream,
                                   const codegen::KernelSpec& kernel, const std::string& cubin,
                                   const std::vector<Literal>& args) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Module> module,
                        device.LoadModule(runtime::ModuleSpec::FromCubin(cubin, kernel.name)));
  runtime::Allocator& alloc = device.device_allocator();
  std::vector<runtime::OwnedDeviceMemory> buffers;
  std::vector<runtime::DeviceMemory> operand_mem, output_mem;
  runtime::KernelArgs kargs;
  for (const codegen::KernelParam& p : kernel.params) {
    using Kind = codegen::KernelParam::Kind;
    if (p.kind == Kind::kScalar) return Unimplemented("scalar kernel parameters");
    uint64_t bytes = p.kind == Kind::kScratch
                         ? uint64_t(kernel.scratch_bytes)
                         : uint64_t(p.shape.num_elements()) * PrimitiveByteWidth(p.shape.element_type());
    // An in-place output shares its operand's buffer.
    if (p.kind == Kind::kOutput) {
      bool shared = false;
      for (const auto& [out, operand] : kernel.in_place) {
        if (out != p.index) continue;
        output_mem.push_back(operand_mem[operand]);
        kargs.Add(operand_mem[operand]);
        shared = true;
      }
      if (shared) continue;
    }
    KILN_ASSIGN_OR_RETURN(runtime::OwnedDeviceMemory m,
                          runtime::OwnedDeviceMemory::Allocate(alloc, std::max<uint64_t>(bytes, 16)));
    if (p.kind == Kind::kOperand) {
      if (p.index >= int64_t(args.size())) return InvalidArgument("too few arguments");
      std::vector<uint8_t> host = ToPhysical(args[p.index], p.shape);
      if (!host.empty()) KILN_RETURN_IF_ERROR(stream.MemcpyHostToDevice(m.get(), host.data(), host.size()));
      operand_mem.push_back(m.get());
    } else if (p.kind == Kind::kOutput) {
      KILN_RETURN_IF_ERROR(stream.Memset8(m.get(), 0xA5));  // garbage: every element must be written
      output_mem.push_back(m.get());
    } else {
      KILN_RETURN_IF_ERROR(stream.Memset8(m.get(), 0x5A));
    }
    kargs.Add(m.get());
    buffers.push_back(std::move(m));
  }
  for (const codegen::KernelLaunch& l : kernel.launches) {
    KILN_ASSIGN_OR_RETURN(runtime::Kernel * k, module->GetKernel(l.entry));
    if (l.dims.shared_memory_bytes > 48 * 1024)
      KILN_RETURN_IF_ERROR(k->SetMaxDynamicSharedMemory(l.dims.shared_memory_bytes));
    KILN_RETURN_IF_ERROR(stream.Launch(*k, l.dims, kargs));
  }
  std::vector<Literal> outs;
  size_t o = 0;
  for (const codegen::KernelParam& p : kernel.params) {
    if (p.kind != codegen::KernelParam::Kind::kOutput) continue;
    std::vector<uint8_t> host(uint64_t(p.shape.num_elements()) * PrimitiveByteWidth(p.shape.element_type()));
    if (!host.empty())
      KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToHost(host.data(), output_mem[o], host.size()));
    KILN_RETURN_IF_ERROR(stream.Synchronize());
    outs.push_back(FromPhysical(host, p.shape));
    ++o;
  }
  KILN_RETURN_IF_ERROR(stream.Synchronize());
  if (outs.size() == 1) return std::move(outs[0]);
  return Literal::MakeTuple(std::move(outs));
}

}  // namespace kiln::cuda::testing
