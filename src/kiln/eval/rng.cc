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
void StoreBits(Literal& out, int64_t i, uint64_t v, int width_bytes) {
  // Little-endian host: the low bytes of v are the element's bits.
  std::memcpy(out.untyped_data() + i * width_bytes, &v, width_bytes);
}

StatusOr<Literal> EvalRngBitGenerator(const HloInstruction& instr,
                                      std::span<const Literal* const> ops, Evaluator&) {
  if (ops.size() != 1)
    return InvalidArgument("rng-bit-generator %", instr.name(), " takes one operand");
  const Literal& state = *ops[0];
  const Shape& ss = state.shape();
  const Shape& rs = instr.shape();
  if (!ss.IsArray() || ss.rank() != 1 || !IsIntegralType(ss.element_type()) ||
      PrimitiveBitWidth(ss.element_type()) != 64)
    return InvalidArgument("rng-bit-generator %", instr.name(), ": state must be u64[n], got ",
                           ss.ToString(false));
  if (!rs.IsTuple() || rs.tuple_shapes_size() != 2 || !rs.tuple_shapes(1).IsArray())
    return InvalidArgument("rng-bit-generator %", instr.name(), ": result must be (state, bits)");
  const Shape& data_shape = rs.tuple_shapes(1);
  const PrimitiveType dt = data_shape.element_type();
  const int bits = PrimitiveBitWidth(dt);
  if (IsComplexType(dt) || dt == PrimitiveType::kPred || bits > 64 || bits < 8)
    return UnsupportedInstruction(instr,
                                  StrCat("rng-bit-generator output type ", PrimitiveTypeName(dt)));
  const int width = PrimitiveByteWidth(dt);
  const int64_t n = data_shape.num_elements();
  std::vector<uint64_t> st(ss.dimensions(0));
  std::memcpy(st.data(), state.untyped_data(), st.size() * 8);
  Literal new_state(ss);
  Literal data(data_shape);
  RandomAlgorithm alg = instr.attrs().rng_algorithm;
  if (alg == RandomAlgorithm::kDefault) alg = RandomAlgorithm::kPhilox;

  if (alg == RandomAlgorithm::kThreeFry) {
    if (st.size() != 2)
      return InvalidArgument("rng-bit-generator %", instr.name(),
                             ": three_fry needs a u64[2] state, got ", ss.ToString(false));
    const uint64_t key = st[0], ctr = st[1];
    const uint32_t k[2] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
    auto block = [&](uint64_t c, uint32_t out[2]) {
      out[0] = static_cast<uint32_t>(c);
      out[1] = static_cast<uint32_t>(c >> 32);
      ThreeFry2x32(out, k);
    };
    uint64_t advance;
    if (bits == 64) {
      for (int64_t i = 0; i < n; ++i) {
        uint32_t o[2];
        block(ctr + static_cast<uint64_t>(i), o);
        StoreBits(data, i, uint64_t{o[0]} | (uint64_t{o[1]} << 32), width);
      }
      advance = static_cast<uint64_t>(n);
    } else {
      // Split the shape in halves along split_dim.
      std::vector<int64_t> dims = data_shape.dimensions();
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
      const int64_t nhalf = eval_internal::ElementProduct(half);
      const std::vector<int64_t> ostrides = RowMajorStrides(dims);
      std::vector<int64_t> idx(half.size(), 0);
      for (int64_t h = 0; h < nhalf; ++h) {
        uint32_t o[2];
        block(ctr + static_cast<uint64_t>(h), o);
        for (int w = 0; w < 2; ++w) {
          const int64_t pos = 2 * idx[split] + w;
          if (pos >= dims[split]) continue;
          int64_t lin = 0;
          for (size_t d = 0; d < dims.size(); ++d)
            lin += (static_cast<int64_t>(d) == split ? pos : idx[d]) * ostrides[d];
          StoreBits(data, lin, o[w], width);
        }
        eval_internal::NextRowMajorIndex(idx, half);
      }
      advance = static_cast<uint64_t>(nhalf);
    }
    std::vector<uint64_t> ns = {key, ctr + advance};
    std::memcpy(new_state.untyped_data(), ns.data(), 16);
  } else if (alg == RandomAlgorithm::kPhilox) {
    if (st.size() != 2 && st.size() != 3)
      return InvalidArgument("rng-bit-generator %", instr.name(),
                             ": philox needs a u64[2] or u64[3] state, got ", ss.ToString(false));
    const uint64_t key = st[0];
    const uint64_t low = st[1];
    const uint64_t high = st.size() == 3 ? st[2] : st[0];
    const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    const int64_t per_block = bits == 64 ? 2 : 4;
    const int64_t nblocks = (n + per_block - 1) / per_block;
    for (int64_t j = 0; j < nblocks; ++j) {
      const uint64_t l = low + static_cast<uint64_t>(j);
      const uint64_t hgh = l < low ? high + 1 : high;
      uint32_t x[4] = {static_cast<uint32_t>(l), static_cast<uint32_t>(l >> 32),
                       static_cast<uint32_t>(hgh), static_cast<uint32_t>(hgh >> 32)};
      Philox4x32(x, k0, k1);
      for (int64_t w = 0; w < per_block; ++w) {
        const int64_t i = j * per_block + w;
        if (i >= n) break;
        const uint64_t v =
            bits == 64 ? (uint64_t{x[2 * w]} | (uint64_t{x[2 * w + 1]} << 32)) : uint64_t{x[w]};
        StoreBits(data, i, v, width);
      }
    }
    const uint64_t nl = low + static_cast<uint64_t>(nblocks);
    const uint64_t nh = nl < low ? high + 1 : high;
    std::vector<uint64_t> ns = {key, nl};
    if (st.size() == 3) ns.push_back(nh);
    std::memcpy(new_state.untyped_data(), ns.data(), ns.size() * 8);
  } else {
    return UnsupportedInstruction(instr, "unknown rng algorithm");
  }
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
