// bitcast-convert between element types of different widths (f32[N] <-> u8[N,4], f64[N] <->
// u32[N,2], s4[N,2] <-> s8[N], ...): the wider side has an extra minor dimension of the width
// ratio, and the narrow elements are the wide one's parts in little-endian order (element 0 the
// least significant), as the evaluator defines it (eval/convert.cc). Row-major views make that
// a byte copy whenever both widths are whole bytes; pred results are made canonical (0 or 1).
// Sub-byte types (s4/u4/s2/u2/f4, one byte per element in a view, signed ones sign-extended)
// are packed and unpacked element by element. Equal widths are the loop kernel's.
#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"

namespace kiln::cpu::internal {
namespace {

int BitWidth(PrimitiveType t) { return t == PrimitiveType::kPred ? 8 : PrimitiveBitWidth(t); }

uint64_t Mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

class BitcastConvertKernel final : public CpuKernel {
 public:
  BitcastConvertKernel(const HloInstruction& instr)
      : in_(instr.operand(0)->shape()), out_(instr.shape()),
        name_(StrCat("bitcast_convert[", ShapeText(in_), " -> ", ShapeText(out_), "]")) {}

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 1 || outputs.size() != 1 ||
        inputs[0].shape.dimensions() != in_.dimensions() || outputs[0].shape.dimensions() != out_.dimensions())
      return InvalidArgument(name_, ": views do not match");
    const PrimitiveType ti = in_.element_type(), to = out_.element_type();
    const int wi = BitWidth(ti), wo = BitWidth(to);
    const auto* src = static_cast<const uint8_t*>(inputs[0].data);
    auto* dst = static_cast<uint8_t*>(outputs[0].data);
    const int64_t out_bytes = outputs[0].byte_size();
    if (wi % 8 == 0 && wo % 8 == 0) {
      ParallelCopy(ctx, dst, src, std::min(inputs[0].byte_size(), out_bytes));
      if (to == PrimitiveType::kPred)
        for (int64_t i = 0; i < out_bytes; ++i) dst[i] = dst[i] != 0;
      return OkStatus();
    }
    // Sub-byte on one side: one wide element is `ratio` narrow ones.
    const bool widen = wo > wi;
    const int wn = widen ? wi : wo, ww = widen ? wo : wi;
    const int64_t ratio = ww / wn;
    const PrimitiveType tn = widen ? ti : to, tw = widen ? to : ti;
    const int64_t wide_count = widen ? out_.num_elements() : in_.num_elements();
    const int nb = BitWidth(tn) < 8 ? 1 : wn / 8;  // bytes per narrow element in a view
    const int wb = BitWidth(tw) < 8 ? 1 : ww / 8;
    for (int64_t e = 0; e < wide_count; ++e) {
      if (widen) {
        uint64_t bits = 0;
        for (int64_t k = 0; k < ratio; ++k) {
          uint64_t part = 0;
          std::memcpy(&part, src + (e * ratio + k) * nb, nb);
          bits |= (part & Mask(wn)) << (k * wn);
        }
        StoreBits(tw, bits, dst + e * wb, wb);
      } else {
        uint64_t bits = 0;
        std::memcpy(&bits, src + e * wb, wb);
        bits &= Mask(ww);
        for (int64_t k = 0; k < ratio; ++k)
          StoreBits(tn, (bits >> (k * wn)) & Mask(wn), dst + (e * ratio + k) * nb, nb);
      }
    }
    return OkStatus();
  }

 private:
  // Writes `bits` (the element's raw bits) as an element of `t` taking `bytes` bytes in a view:
  // sub-byte signed integers sign-extended into their byte, pred canonical.
  static void StoreBits(PrimitiveType t, uint64_t bits, uint8_t* p, int bytes) {
    const int w = BitWidth(t);
    if (w < 8) {
      uint8_t b = static_cast<uint8_t>(bits & Mask(w));
      if (IsSignedIntegralType(t) && ((bits >> (w - 1)) & 1)) b |= static_cast<uint8_t>(~Mask(w));
      *p = b;
      return;
    }
    if (t == PrimitiveType::kPred) {
      *p = bits != 0;
      return;
    }
    std::memcpy(p, &bits, bytes);
  }

  Shape in_, out_;
  std::string name_;
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateBitcastConvertKernel(const HloInstruction& instr,
                                                                const CpuKernelOptions&) {
  if (instr.operand_count() != 1 || !instr.shape().IsArray() || !instr.operand(0)->shape().IsArray())
    return Unimplemented("bitcast-convert of a non-array");
  const Shape& in = instr.operand(0)->shape();
  const Shape& out = instr.shape();
  const int wi = BitWidth(in.element_type()), wo = BitWidth(out.element_type());
  if (wi == 0 || wo == 0 || wi > 64 || wo > 64 || wi == wo)
    return Unimplemented("bitcast-convert ", ShapeText(in), " -> ", ShapeText(out));
  // The dimension rule (the verifier's; checked again since --no-verify skips it).
  std::vector<int64_t> expect = in.dimensions();
  if (wi > wo) {
    if (wi % wo) return InvalidArgument("bitcast-convert %", instr.name(), ": widths not divisible");
    expect.push_back(wi / wo);
  } else {
    if (wo % wi || in.rank() == 0 || in.dimensions().back() != wo / wi)
      return InvalidArgument("bitcast-convert %", instr.name(), ": operand ", ShapeText(in), " cannot be bitcast to ",
                             ShapeText(out));
    expect.pop_back();
  }
  if (expect != out.dimensions())
    return InvalidArgument("bitcast-convert %", instr.name(), ": operand ", ShapeText(in), " cannot be bitcast to ",
                           ShapeText(out));
  return std::unique_ptr<CpuKernel>(new BitcastConvertKernel(instr));
}

}  // namespace kiln::cpu::internal
