// Random number kernels: rng-bit-generator (bit-exact with XLA), the stateful rng op, and
// rng-get-and-update-state.
//
// rng-bit-generator(state) -> (new_state, bits), as XLA's RngBitGeneratorExpander and
// hlo/builder/lib/prng.cc define it (rng_default is Philox: XLA's CPU and GPU compilers expand
// it as RNG_PHILOX):
//
//   three_fry: state u64[2] = [key, counter]. Threefry-2x32 (20 rounds) of the 64-bit input
//     (counter + i) under the 64-bit key, each split into (low, high) 32-bit words.
//     64-bit outputs: element i (row-major) = out0 | out1 << 32 for input counter + i; the
//     counter advances by the element count.
//     32-bit outputs: the shape is split in two halves along a "split" dimension (the first
//     even-sized one, else the first of maximal size; a scalar counts as [1]); half element h
//     (row-major over the half shape, split size ceil(d/2)) uses input counter + h, and its two
//     output words land at split positions 2*s and 2*s + 1 (the last dropped for odd d); the
//     counter advances by the half's element count.
//     Narrower outputs (8/16 bits): the 32-bit outputs truncated.
//   philox: state u64[2] = [key, c] (128-bit counter low = c, high = key) or
//     u64[3] = [key, low, high]. Philox-4x32 (10 rounds) of the 128-bit counters counter + j
//     under the 64-bit key (the key is not scrambled). 32-bit outputs: element 4*j + w is output
//     word w of block j; 64-bit outputs: element 2*j + w is (word 2w | word 2w+1 << 32); the
//     counter advances by the block count; narrower outputs truncate the 32-bit ones. The new
//     state is [key, low] (or [key, low, high]).
//
// rng (stateful): deterministic from Evaluator::rng_state() (seeded by EvaluatorOptions::
// rng_seed, advanced by every rng evaluation) with a SplitMix64 stream; only statistically
// right, not XLA's bits (XLA's are backend-specific): rng_uniform gives [a, b) for floats (a
// uniform double rounded to the type, redrawn if it rounds to b) and integers (a + r mod (b-a));
// rng_normal gives mu + sigma * N(0,1) by Box-Muller.
#include <cmath>
#include <cstring>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/misc_internal.h"
#include "kiln/eval/rng_bits.h"

namespace kiln {
namespace {

inline uint32_t Rotl32(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

// Threefry-2x32 with 20 rounds, as XLA's prng.cc defines it.
void ThreeFry2x32(uint32_t x[2], const uint32_t key[2]) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
  x[0] += ks[0];
  x[1] += ks[1];
  for (int block = 0; block < 5; ++block) {
    const int* rot = (block % 2 == 0) ? &kRot[0] : &kRot[4];
    for (int r = 0; r < 4; ++r) {
      x[0] += x[1];
      x[1] = Rotl32(x[1], rot[r]);
      x[1] ^= x[0];
    }
    // Key injection after each group of four rounds.
    x[0] += ks[(block + 1) % 3];
    x[1] += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
}

// Philox-4x32 with 10 rounds, as XLA's prng.cc defines it.
void Philox4x32(uint32_t x[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{x[0]} * 0xD2511F53u;
    const uint64_t p1 = uint64_t{x[2]} * 0xCD9E8D57u;
    const uint32_t y0 = static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ k0;
    const uint32_t y1 = static_cast<uint32_t>(p1);
    const uint32_t y2 = static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ k1;
    const uint32_t y3 = static_cast<uint32_t>(p0);
    x[0] = y0;
    x[1] = y1;
    x[2] = y2;
    x[3] = y3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// Writes raw output bits (the low `bits` of `v`) into element i of `out`.
}  // namespace

namespace eval_internal {

StatusOr<RngBitsLayout> PlanRngBits(const HloInstruction& instr) {
  if (instr.operand_count() != 1)
    return InvalidArgument("rng-bit-generator %", instr.name(), " takes one operand");
  const Shape& ss = instr.operand(0)->shape();
  const Shape& rs = instr.shape();
  if (!ss.IsArray() || ss.rank() != 1 || !IsIntegralType(ss.element_type()) ||
      PrimitiveBitWidth(ss.element_type()) != 64)
    return InvalidArgument("rng-bit-generator %", instr.name(), ": state must be u64[n], got ",
                           ss.ToString(false));
  if (!rs.IsTuple() || rs.tuple_shapes_size() != 2 || !rs.tuple_shapes(1).IsArray())
    return InvalidArgument("rng-bit-generator %", instr.name(), ": result must be (state, bits)");
  const Shape& data_shape = rs.tuple_shapes(1);
  const PrimitiveType dt = data_shape.element_type();
  RngBitsLayout l;
  l.bits = PrimitiveBitWidth(dt);
  if (IsComplexType(dt) || dt == PrimitiveType::kPred || l.bits > 64 || l.bits < 8)
    return UnsupportedInstruction(instr,
                                  StrCat("rng-bit-generator output type ", PrimitiveTypeName(dt)));
  l.width = PrimitiveByteWidth(dt);
  l.elements = data_shape.num_elements();
  l.state_size = ss.dimensions(0);
  l.algorithm = instr.attrs().rng_algorithm;
  if (l.algorithm == RandomAlgorithm::kDefault) l.algorithm = RandomAlgorithm::kPhilox;
  if (l.algorithm == RandomAlgorithm::kThreeFry) {
    if (l.state_size != 2)
      return InvalidArgument("rng-bit-generator %", instr.name(),
                             ": three_fry needs a u64[2] state, got ", ss.ToString(false));
    if (l.bits == 64) {
      l.blocks = l.elements;
      return l;
    }
    // Split the shape in halves along split_dim.
    l.dims = data_shape.dimensions();
    if (l.dims.empty()) {
      l.dims = {1};
    } else {
      l.split = -1;
      for (size_t i = 0; i < l.dims.size(); ++i)
        if (l.dims[i] % 2 == 0) {
          l.split = static_cast<int64_t>(i);
          break;
        }
      if (l.split < 0) {
        l.split = 0;
        for (size_t i = 1; i < l.dims.size(); ++i)
          if (l.dims[i] > l.dims[l.split]) l.split = static_cast<int64_t>(i);
      }
    }
    l.half = l.dims;
    l.half[l.split] = (l.dims[l.split] + 1) / 2;
    l.blocks = ElementProduct(l.half);
    return l;
  }
  if (l.algorithm == RandomAlgorithm::kPhilox) {
    if (l.state_size != 2 && l.state_size != 3)
      return InvalidArgument("rng-bit-generator %", instr.name(),
                             ": philox needs a u64[2] or u64[3] state, got ", ss.ToString(false));
    const int64_t per_block = l.bits == 64 ? 2 : 4;
    l.blocks = (l.elements + per_block - 1) / per_block;
    return l;
  }
  return UnsupportedInstruction(instr, "unknown rng algorithm");
}

void FillRngBits(const RngBitsLayout& l, std::span<const uint64_t> state, void* data, int64_t b0,
                 int64_t b1) {
  if (b0 >= b1) return;
  uint8_t* out = static_cast<uint8_t*>(data);
  // Little-endian host: the low bytes of v are the element's bits.
  auto store = [&](int64_t i, uint64_t v) { std::memcpy(out + i * l.width, &v, l.width); };
  const uint64_t key = state[0];
  if (l.algorithm == RandomAlgorithm::kThreeFry) {
    const uint64_t ctr = state[1];
    const uint32_t k[2] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
    auto block = [&](uint64_t c, uint32_t o[2]) {
      o[0] = static_cast<uint32_t>(c);
      o[1] = static_cast<uint32_t>(c >> 32);
      ThreeFry2x32(o, k);
    };
    if (l.bits == 64) {
      for (int64_t i = b0; i < b1; ++i) {
        uint32_t o[2];
        block(ctr + static_cast<uint64_t>(i), o);
        store(i, uint64_t{o[0]} | (uint64_t{o[1]} << 32));
      }
      return;
    }
    const std::vector<int64_t> ostrides = RowMajorStrides(l.dims);
    std::vector<int64_t> idx(l.half.size(), 0);
    int64_t rem = b0;
    for (size_t d = l.half.size(); d-- > 0;) {
      idx[d] = rem % l.half[d];
      rem /= l.half[d];
    }
    for (int64_t h = b0; h < b1; ++h) {
      uint32_t o[2];
      block(ctr + static_cast<uint64_t>(h), o);
      for (int w = 0; w < 2; ++w) {
        const int64_t pos = 2 * idx[l.split] + w;
        if (pos >= l.dims[l.split]) continue;
        int64_t lin = 0;
        for (size_t d = 0; d < l.dims.size(); ++d)
          lin += (static_cast<int64_t>(d) == l.split ? pos : idx[d]) * ostrides[d];
        store(lin, o[w]);
      }
      NextRowMajorIndex(idx, l.half);
    }
    return;
  }
  const uint64_t low = state[1];
  const uint64_t high = l.state_size == 3 ? state[2] : state[0];
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const int64_t per_block = l.bits == 64 ? 2 : 4;
  for (int64_t j = b0; j < b1; ++j) {
    const uint64_t lo = low + static_cast<uint64_t>(j);
    const uint64_t hgh = lo < low ? high + 1 : high;
    uint32_t x[4] = {static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32),
                     static_cast<uint32_t>(hgh), static_cast<uint32_t>(hgh >> 32)};
    Philox4x32(x, k0, k1);
    for (int64_t w = 0; w < per_block; ++w) {
      const int64_t i = j * per_block + w;
      if (i >= l.elements) break;
      store(i, l.bits == 64 ? (uint64_t{x[2 * w]} | (uint64_t{x[2 * w + 1]} << 32))
                            : uint64_t{x[w]});
    }
  }
}

void AdvanceRngState(const RngBitsLayout& l, std::span<const uint64_t> state,
                     std::span<uint64_t> new_state) {
  const uint64_t advance = static_cast<uint64_t>(l.blocks);
  new_state[0] = state[0];
  if (l.algorithm == RandomAlgorithm::kThreeFry) {
    new_state[1] = state[1] + advance;
    return;
  }
  const uint64_t low = state[1];
  const uint64_t high = l.state_size == 3 ? state[2] : state[0];
  const uint64_t nl = low + advance;
  new_state[1] = nl;
  if (l.state_size == 3) new_state[2] = nl < low ? high + 1 : high;
}

}  // namespace eval_internal

namespace {

StatusOr<Literal> EvalRngBitGenerator(const HloInstruction& instr,
                                      std::span<const Literal* const> ops, Evaluator&) {
  if (ops.size() != 1)
    return InvalidArgument("rng-bit-generator %", instr.name(), " takes one operand");
  KILN_ASSIGN_OR_RETURN(eval_internal::RngBitsLayout l, eval_internal::PlanRngBits(instr));
  const Literal& state = *ops[0];
  if (!state.shape().IsArray() || state.shape().rank() != 1 ||
      state.shape().dimensions(0) != l.state_size)
    return InvalidArgument("rng-bit-generator %", instr.name(), ": state does not match");
  std::vector<uint64_t> st(l.state_size), ns(l.state_size);
  std::memcpy(st.data(), state.untyped_data(), st.size() * 8);
  Literal new_state(state.shape());
  Literal data(instr.shape().tuple_shapes(1));
  eval_internal::FillRngBits(l, st, data.untyped_data(), 0, l.blocks);
  eval_internal::AdvanceRngState(l, st, ns);
  std::memcpy(new_state.untyped_data(), ns.data(), ns.size() * 8);
  std::vector<Literal> parts;
  parts.push_back(std::move(new_state));
  parts.push_back(std::move(data));
  return Literal::MakeTuple(std::move(parts));
}

// SplitMix64 step on the evaluator's rng state.
uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double NextUnit(uint64_t& state) {  // [0, 1)
  return static_cast<double>(NextRandom(state) >> 11) * 0x1.0p-53;
}

StatusOr<Literal> EvalRng(const HloInstruction& instr, std::span<const Literal* const> ops,
                          Evaluator& evaluator) {
  if (ops.size() != 2) return InvalidArgument("rng %", instr.name(), " takes 2 operands");
  for (int i = 0; i < 2; ++i)
    if (!ops[i]->shape().IsArray() || ops[i]->element_count() != 1)
      return InvalidArgument("rng %", instr.name(), ": operands must be scalars");
  const Shape& rs = instr.shape();
  const PrimitiveType t = rs.element_type();
  Literal out(rs);
  const int64_t n = rs.num_elements();
  uint64_t& state = evaluator.rng_state();
  if (instr.attrs().distribution == RandomDistribution::kUniform) {
    if (IsFloatingPointType(t)) {
      const double a = ops[0]->GetAsDouble(0), b = ops[1]->GetAsDouble(0);
      std::vector<double> v(n);
      Literal one(Shape::Scalar(t));
      for (int64_t i = 0; i < n; ++i) {
        for (int attempt = 0;; ++attempt) {
          double x = a + (b - a) * NextUnit(state);
          one.SetFromDouble(0, x);
          double r = one.GetAsDouble(0);
          if (r < b || attempt > 64 || !(a < b)) {
            v[i] = (r < b || !(a < b)) ? r : a;
            break;
          }
        }
      }
      eval_internal::StoreDoubles(v, out);
    } else if (IsIntegralType(t)) {
      const int64_t a = ops[0]->GetAsInt64(0), b = ops[1]->GetAsInt64(0);
      std::vector<int64_t> v(n);
      const uint64_t range = static_cast<uint64_t>(b) - static_cast<uint64_t>(a);
      for (int64_t i = 0; i < n; ++i)
        v[i] =
            b > a ? static_cast<int64_t>(static_cast<uint64_t>(a) + NextRandom(state) % range) : a;
      eval_internal::StoreInt64s(v, out);
    } else {
      return UnsupportedInstruction(instr, StrCat("rng_uniform of ", PrimitiveTypeName(t)));
    }
  } else {
    if (!IsFloatingPointType(t))
      return UnsupportedInstruction(instr, StrCat("rng_normal of ", PrimitiveTypeName(t)));
    const double mu = ops[0]->GetAsDouble(0), sigma = ops[1]->GetAsDouble(0);
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; i += 2) {
      double u1 = NextUnit(state), u2 = NextUnit(state);
      if (u1 < 1e-300) u1 = 1e-300;
      const double r = std::sqrt(-2.0 * std::log(u1));
      v[i] = mu + sigma * r * std::cos(2 * M_PI * u2);
      if (i + 1 < n) v[i + 1] = mu + sigma * r * std::sin(2 * M_PI * u2);
    }
    eval_internal::StoreDoubles(v, out);
  }
  return out;
}

// rng-get-and-update-state: returns the evaluator's state as the 128-bit value [state, 0] and
// advances it by delta (the `delta` attribute, default 1).
StatusOr<Literal> EvalRngGetAndUpdateState(const HloInstruction& instr,
                                           std::span<const Literal* const>, Evaluator& e) {
  const Shape& rs = instr.shape();
  if (!rs.IsArray() || rs.element_type() != PrimitiveType::kU64 || rs.num_elements() != 2)
    return InvalidArgument("rng-get-and-update-state %", instr.name(), " must return u64[2]");
  int64_t delta = 1;
  for (const auto& [k, v] : instr.attrs().extra)
    if (k == "delta") delta = std::strtoll(v.c_str(), nullptr, 10);
  Literal out(rs);
  out.data<uint64_t>()[0] = e.rng_state();
  out.data<uint64_t>()[1] = 0;
  e.rng_state() += static_cast<uint64_t>(delta);
  return out;
}

}  // namespace

namespace eval_internal {
void RegisterRngKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kRngBitGenerator, EvalRngBitGenerator);
  r.Register(HloOpcode::kRng, EvalRng);
  r.Register(HloOpcode::kRngGetAndUpdateState, EvalRngGetAndUpdateState);
}
}  // namespace eval_internal

}  // namespace kiln
