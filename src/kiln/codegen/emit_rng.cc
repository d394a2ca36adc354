// The rng-bit-generator emitter: XLA's counter-based generators, bit-exact with the reference
// evaluator (eval/rng.cc states the layouts of state and bits; the device functions are
// kiln_philox4x32 / kiln_threefry2x32 in the prelude). One thread per generator block: a Philox
// block gives four 32-bit (two 64-bit) outputs, a Threefry block one 64-bit output or two
// 32-bit ones placed along the split dimension. Thread 0 writes the advanced state.
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/emitter_common.h"
#include "kiln/codegen/emitters.h"

namespace kiln::codegen {

namespace {

std::string U64(uint64_t v) { return std::to_string(v) + "ull"; }

// Unsigned storage of `bytes` bytes.
std::string BitsType(int bytes) {
  switch (bytes) {
    case 1: return "u8";
    case 2: return "u16";
    case 4: return "u32";
    default: return "u64";
  }
}

}  // namespace

StatusOr<KernelSpec> EmitRngBitGenerator(const HloInstruction& instr, const DeviceSpec& device,
                                         const KernelConfig& config) {
  if (instr.opcode() != HloOpcode::kRngBitGenerator)
    return Unimplemented("rng-bit-generator emitter: %", instr.name(), " is ",
                         HloOpcodeString(instr.opcode()));
  const Shape& rs = instr.shape();
  if (instr.operand_count() != 1 || !rs.IsTuple() || rs.tuple_shapes_size() != 2)
    return InvalidArgument("rng-bit-generator %", instr.name(), ": expected (state) -> (state, bits)");
  const Shape& ss = instr.operand(0)->shape();
  if (ss.rank() != 1 || PrimitiveBitWidth(ss.element_type()) != 64 || !IsIntegralType(ss.element_type()))
    return InvalidArgument("rng-bit-generator %", instr.name(), ": state must be u64[n], got ",
                           ss.ToString(false));
  const int64_t state_size = ss.dimensions(0);
  const Shape data = WithLayout(rs.tuple_shapes(1));
  const PrimitiveType dt = data.element_type();
  const int bits = PrimitiveBitWidth(dt);
  if (IsComplexType(dt) || dt == PrimitiveType::kPred || bits < 8 || bits > 64 || IsSubByteType(dt))
    return Unimplemented("rng-bit-generator %", instr.name(), ": output type ", PrimitiveTypeName(dt));
  if (!SamePhysicalShape(data, Shape::ArrayWithDefaultLayout(dt, data.dimensions())))
    return Unimplemented("rng-bit-generator %", instr.name(), ": non-row-major output layout");
  RandomAlgorithm alg = instr.attrs().rng_algorithm;
  if (alg == RandomAlgorithm::kDefault) alg = RandomAlgorithm::kPhilox;
  if (alg == RandomAlgorithm::kThreeFry && state_size != 2)
    return InvalidArgument("rng-bit-generator %", instr.name(), ": three_fry needs a u64[2] state");
  if (alg == RandomAlgorithm::kPhilox && state_size != 2 && state_size != 3)
    return InvalidArgument("rng-bit-generator %", instr.name(), ": philox needs a u64[2] or u64[3] state");

  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  KernelConfig c = config;
  if (c.block_size == 0) c.block_size = 256;
  if (c.block_size < 32 || c.block_size > device.max_threads_per_block || c.block_size % 32 != 0)
    return InvalidArgument("rng-bit-generator emitter: bad block size ", c.block_size);
  c.vector_width = 1;
  c.unroll = 1;
  KernelAssembler ka(view, "rng_bit_generator", c, device.dialect);
  ka.MarkRead(0);
  const std::string st = ka.operand_pointer(0), out_state = ka.output_pointer(0),
                    out = ka.output_pointer(1);
  const int64_t n = data.num_elements();
  const std::string w = BitsType(PrimitiveByteWidth(dt));
  std::string b;  // the body
  auto line = [&](const std::string& s) { b += "  " + s + "\n"; };
  line("const u64 key = (u64)" + st + "[0];");
  line("const u32 k0 = (u32)key, k1 = (u32)(key >> 32);");
  line("const u64 t = (u64)blockIdx.x * " + std::to_string(c.block_size) + " + threadIdx.x;");
  int64_t threads = 0;
  if (alg == RandomAlgorithm::kPhilox) {
    const int64_t per_block = bits == 64 ? 2 : 4;
    threads = CeilDiv(n, per_block);
    line("// Philox-4x32: block t of the 128-bit counter (low, high) + t gives elements " +
         std::to_string(per_block) + "t..");
    line("const u64 low = (u64)" + st + "[1];");
    line("const u64 high = " + (state_size == 3 ? "(u64)" + st + "[2]" : std::string("key")) + ";");
    line("if (t == 0) {");
    line("  const u64 nl = low + " + U64(threads) + ";");
    line("  " + out_state + "[0] = key;");
    line("  " + out_state + "[1] = nl;");
    if (state_size == 3) line("  " + out_state + "[2] = nl < low ? high + 1 : high;");
    line("}");
    line("if (t < " + U64(threads) + ") {");
    line("  const u64 l = low + t;");
    line("  const u64 h = l < low ? high + 1 : high;");
    line("  u32 x[4] = {(u32)l, (u32)(l >> 32), (u32)h, (u32)(h >> 32)};");
    line("  kiln_philox4x32(x, k0, k1);");
    line("  " + w + "* o = reinterpret_cast<" + w + "*>(" + out + ");");
    for (int64_t k = 0; k < per_block; ++k) {
      const std::string i = "t * " + std::to_string(per_block) + " + " + std::to_string(k);
      const std::string v = bits == 64 ? "((u64)x[" + std::to_string(2 * k) + "] | ((u64)x[" +
                                             std::to_string(2 * k + 1) + "] << 32))"
                                       : "x[" + std::to_string(k) + "]";
      line("  if (" + i + " < " + U64(n) + ") o[" + i + "] = (" + w + ")" + v + ";");
    }
    line("}");
  } else if (bits == 64) {
    threads = n;
    line("// Threefry-2x32 of the 64-bit counter + t gives element t.");
    line("const u64 ctr = (u64)" + st + "[1];");
    line("if (t == 0) {");
    line("  " + out_state + "[0] = key;");
    line("  " + out_state + "[1] = ctr + " + U64(n) + ";");
    line("}");
    line("if (t < " + U64(n) + ") {");
    line("  const u64 c = ctr + t;");
    line("  u32 x[2] = {(u32)c, (u32)(c >> 32)};");
    line("  kiln_threefry2x32(x, k0, k1);");
    line("  reinterpret_cast<u64*>(" + out + ")[t] = (u64)x[0] | ((u64)x[1] << 32);");
    line("}");
  } else {
    // 32-bit words placed in pairs along the split dimension (see eval/rng.cc).
    std::vector<int64_t> dims = data.dimensions();
    int64_t split = 0;
    if (dims.empty()) {
      dims = {1};
    } else {
      split = -1;
      for (size_t i = 0; i < dims.size(); ++i)
        if (dims[i] % 2 == 0) {
          split = static_cast<int64_t>(i);
          break;
        }
      if (split < 0) {
        split = 0;
        for (size_t i = 1; i < dims.size(); ++i)
          if (dims[i] > dims[split]) split = static_cast<int64_t>(i);
      }
    }
    std::vector<int64_t> half = dims;
    half[split] = (dims[split] + 1) / 2;
    int64_t nhalf = 1;
    for (int64_t d : half) nhalf *= d;
    if (n == 0) nhalf = 0;
    threads = nhalf;
    std::vector<int64_t> strides(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
    line("// Threefry-2x32 of counter + t gives two words, at positions 2s and 2s+1 of split");
    line("// dimension " + std::to_string(split) + " of half-element t.");
    line("const u64 ctr = (u64)" + st + "[1];");
    line("if (t == 0) {");
    line("  " + out_state + "[0] = key;");
    line("  " + out_state + "[1] = ctr + " + U64(nhalf) + ";");
    line("}");
    line("if (t < " + U64(nhalf) + ") {");
    line("  const u64 c = ctr + t;");
    line("  u32 x[2] = {(u32)c, (u32)(c >> 32)};");
    line("  kiln_threefry2x32(x, k0, k1);");
    line("  u64 rest = t;");
    std::string base = "0";
    for (int64_t d = static_cast<int64_t>(half.size()) - 1; d >= 0; --d) {
      line("  const u64 i" + std::to_string(d) + " = rest % " + U64(half[d]) + ";");
      line("  rest /= " + U64(half[d]) + ";");
      if (d != split) base += " + i" + std::to_string(d) + " * " + U64(strides[d]);
    }
    line("  " + w + "* o = reinterpret_cast<" + w + "*>(" + out + ");");
    const std::string s = "i" + std::to_string(split);
    line("  o[" + base + " + 2 * " + s + " * " + U64(strides[split]) + "] = (" + w + ")x[0];");
    line("  if (2 * " + s + " + 1 < " + U64(dims[split]) + ") o[" + base + " + (2 * " + s +
         " + 1) * " + U64(strides[split]) + "] = (" + w + ")x[1];");
    line("}");
  }
  const std::string entry = "rng_" + SanitizeIdentifier(instr.name());
  ka.AddEntry(entry, c.block_size, b);
  runtime::LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(std::max<int64_t>(1, CeilDiv(threads, c.block_size)));
  dims.block.x = static_cast<uint32_t>(c.block_size);
  if (CeilDiv(threads, c.block_size) > INT32_MAX) return Unimplemented("rng-bit-generator: grid too large");
  ka.AddLaunch(entry, dims);
  return ka.Finish();
}

}  // namespace kiln::codegen
