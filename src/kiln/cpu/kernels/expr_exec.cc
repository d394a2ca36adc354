// ExprProgram execution: index-map runs, reads, iota, pad/concatenate selection, blocks.
#include <algorithm>
#include <cstring>
#include <utility>

#include "kiln/cpu/kernels/convert_ops.h"
#include "kiln/cpu/kernels/expr_internal.h"

namespace kiln::cpu::internal {

int64_t ClampedIndexValue(const void* p, PrimitiveType t, int64_t hi) {
  if (hi < 0) hi = 0;
  int64_t v = 0;
  bool huge = false;
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (eval_internal::kIsInt<T>) {
      T x;
      std::memcpy(&x, p, sizeof(T));
      if constexpr (std::is_same_v<T, uint64_t>) {
        huge = x > static_cast<uint64_t>(INT64_MAX);
        v = static_cast<int64_t>(x);
      } else {
        v = static_cast<int64_t>(eval_internal::Widen(x));
      }
    }
  });
  if (huge) return hi;
  return std::clamp<int64_t>(v, 0, hi);
}

namespace {

// Appends a run, merging it into the previous one when it continues it.
inline void PushRun(std::vector<ExprRun>& out, int64_t pos, int64_t len, int64_t base,
                    int64_t stride) {
  if (len <= 0) return;
  if (len == 1) stride = 0;
  if (!out.empty()) {
    ExprRun& last = out.back();
    if (last.pos + last.len == pos) {
      int64_t s = last.len == 1 ? (base - last.base) : last.stride;
      if ((len == 1 || stride == s) && last.base + s * last.len == base) {
        last.stride = s;
        last.len += static_cast<int32_t>(len);
        return;
      }
    }
  }
  out.push_back({static_cast<int32_t>(pos), static_cast<int32_t>(len), base, stride});
}

constexpr int kMaxRank = 64;

// Calls emit(pos, len, j, a, f) for pieces of run `r` (linear indices into the map's merged
// consumer shape) along which the multi-index j moves along at most one dimension a by f per
// position (a = -1: constant).
template <class Emit>
inline void ForEachPiece(const ExprMap& m, const ExprRun& r, Emit&& emit) {
  const int rank = static_cast<int>(m.c_dims.size());
  int64_t j[kMaxRank];
  const int64_t stride = r.len == 1 ? 0 : r.stride;
  // The dimension the stride steps along (merged strides are strictly nested).
  int a = -1;
  int64_t f = 0;
  if (stride != 0) {
    const int64_t as = stride < 0 ? -stride : stride;
    for (int c = rank - 1; c >= 0; --c) {
      if (m.c_strides[c] <= as && as < m.c_strides[c] * m.c_dims[c]) {
        if (as % m.c_strides[c] == 0) {
          a = c;
          f = stride / m.c_strides[c];
        }
        break;
      }
    }
  }
  // cur is a linear index into the merged consumer shape (< its size): one division per dim
  // down the remainder chain, in 32 bits when the shape allows (these divisions dominate the
  // per-block cost of short blocks).
  const bool small = rank == 0 || m.c_strides[0] * m.c_dims[0] <= int64_t{0xffffffff};
  int64_t t = 0;
  while (t < r.len) {
    const int64_t cur = r.base + stride * t;
    if (small) {
      uint32_t rem = static_cast<uint32_t>(cur);
      for (int c = 0; c < rank; ++c) {
        const uint32_t st = static_cast<uint32_t>(m.c_strides[c]);
        const uint32_t q = rem / st;
        j[c] = q;
        rem -= q * st;
      }
    } else {
      int64_t rem = cur;
      for (int c = 0; c < rank; ++c) {
        j[c] = rem / m.c_strides[c];
        rem -= j[c] * m.c_strides[c];
      }
    }
    if (rank > 0 && j[0] >= m.c_dims[0]) j[0] %= m.c_dims[0];
    int64_t len;
    if (stride == 0) {
      len = r.len - t;
    } else if (a < 0) {
      len = 1;
    } else {
      const int64_t left = f == 1  ? m.c_dims[a] - j[a]
                           : f > 0 ? (m.c_dims[a] - 1 - j[a]) / f + 1
                                   : j[a] / (-f) + 1;
      len = std::min<int64_t>(r.len - t, left);
    }
    emit(r.pos + t, len, j, len > 1 ? a : -1, f);
    t += len;
  }
}

}  // namespace

void ComputeMapRuns(const ExprMap& m, const std::vector<ExprRun>& parent, int64_t start,
                    int64_t n, const std::vector<void*>& inv, std::vector<ExprRun>& out) {
  out.clear();
  switch (m.kind) {
    case MapKind::kLoop:
      out.push_back({0, static_cast<int32_t>(n), start, 1});
      return;
    case MapKind::kScalar:
      out.push_back({0, static_cast<int32_t>(n), 0, 0});
      return;
    case MapKind::kAffine: {
      int64_t k = m.k_static;
      for (const ExprMap::DynStart& d : m.dyn)
        k += ClampedIndexValue(inv[d.value], d.type, d.hi) * d.stride;
      const int rank = static_cast<int>(m.c_dims.size());
      if (rank == 0) {
        for (const ExprRun& r : parent) PushRun(out, r.pos, r.len, k, 0);
        return;
      }
      if (rank == 1) {  // linear: no pieces
        const int64_t c0 = m.coef[0];
        for (const ExprRun& r : parent) {
          // j = cur / stride0 (the merged dim's stride), which is exact for in-range runs.
          const int64_t s0 = m.c_strides[0];
          if (r.len == 1 || r.stride % s0 == 0) {
            PushRun(out, r.pos, r.len, k + c0 * (r.base / s0), c0 * (r.stride / s0));
            continue;
          }
          for (int64_t t = 0; t < r.len; ++t)
            PushRun(out, r.pos + t, 1, k + c0 * ((r.base + r.stride * t) / s0), 0);
        }
        return;
      }
      for (const ExprRun& r : parent) {
        ForEachPiece(m, r, [&](int64_t pos, int64_t len, const int64_t* j, int a, int64_t f) {
          int64_t base = k;
          for (int c = 0; c < rank; ++c) base += m.coef[c] * j[c];
          PushRun(out, pos, len, base, a >= 0 ? m.coef[a] * f : 0);
        });
      }
      return;
    }
    case MapKind::kWindow: {
      const int rank = static_cast<int>(m.c_dims.size());
      for (const ExprRun& r : parent) {
        ForEachPiece(m, r, [&](int64_t pos, int64_t len, const int64_t* j, int a, int64_t f) {
          int64_t base = 0;
          for (int c = 0; c < rank; ++c) {
            if (c == a) continue;
            const int64_t u = j[c] - m.low[c], step = m.interior[c] + 1;
            if (u < 0 || u % step != 0 || u / step >= m.size[c]) return;
            base += (u / step) * m.o_strides[c];
          }
          if (a < 0) {
            PushRun(out, pos, len, base, 0);
            return;
          }
          const int64_t u0 = j[a] - m.low[a];
          const int64_t size = m.size[a], step = m.interior[a] + 1;
          if (step == 1) {
            // Positions t in [0, len) with 0 <= u0 + f * t < size.
            int64_t lo = 0, hi = len - 1;
            if (f > 0) {
              if (u0 < 0) lo = (-u0 + f - 1) / f;
              if (size - 1 - u0 < 0) return;
              hi = std::min(hi, (size - 1 - u0) / f);
            } else {
              const int64_t g = -f;
              if (u0 > size - 1) lo = (u0 - (size - 1) + g - 1) / g;
              if (u0 < 0) return;
              hi = std::min(hi, u0 / g);
            }
            if (lo > hi) return;
            PushRun(out, pos + lo, hi - lo + 1, base + (u0 + f * lo) * m.o_strides[a],
                    f * m.o_strides[a]);
            return;
          }
          for (int64_t t = 0; t < len; ++t) {
            const int64_t u = u0 + f * t;
            if (u < 0 || u % step != 0 || u / step >= size) continue;
            PushRun(out, pos + t, 1, base + (u / step) * m.o_strides[a], 0);
          }
        });
      }
      return;
    }
  }
}

// ---- Element movers by width ----

namespace {

template <int W>
struct Elem {
  uint8_t b[W];
};

template <class U>
inline void GatherRun(const uint8_t* src, uint8_t* dst, const ExprRun& r) {
  // Locals: d may alias r's fields (int32/uint32), which would keep the bound in memory.
  const U* s = reinterpret_cast<const U*>(src) + r.base;
  U* __restrict d = reinterpret_cast<U*>(dst) + r.pos;
  const int64_t len = r.len, st = r.stride;
  if (st == 1) {
    std::memcpy(d, s, static_cast<size_t>(len) * sizeof(U));
  } else if (st == 0) {
    const U v = *s;
    for (int64_t t = 0; t < len; ++t) d[t] = v;
  } else {
    for (int64_t t = 0; t < len; ++t) d[t] = s[t * st];
  }
}

inline void GatherRuns(const uint8_t* src, uint8_t* dst, int width,
                       const std::vector<ExprRun>& runs) {
  switch (width) {
    case 1: for (const ExprRun& r : runs) GatherRun<uint8_t>(src, dst, r); break;
    case 2: for (const ExprRun& r : runs) GatherRun<uint16_t>(src, dst, r); break;
    case 4: for (const ExprRun& r : runs) GatherRun<uint32_t>(src, dst, r); break;
    case 8: for (const ExprRun& r : runs) GatherRun<uint64_t>(src, dst, r); break;
    case 16: for (const ExprRun& r : runs) GatherRun<Elem<16>>(src, dst, r); break;
    default: break;
  }
}

// Copies the values at positions covered by `runs` from src to dst (same positions).
inline void SelectRuns(const uint8_t* src, uint8_t* dst, int width,
                       const std::vector<ExprRun>& runs) {
  for (const ExprRun& r : runs)
    std::memcpy(dst + static_cast<int64_t>(r.pos) * width, src + static_cast<int64_t>(r.pos) * width,
                static_cast<size_t>(r.len) * width);
}

inline void Fill(uint8_t* dst, const void* value, int width, int64_t n) {
  switch (width) {
    case 1: std::memset(dst, *static_cast<const uint8_t*>(value), n); break;
    case 2: { uint16_t v; std::memcpy(&v, value, 2); std::fill_n(reinterpret_cast<uint16_t*>(dst), n, v); break; }
    case 4: { uint32_t v; std::memcpy(&v, value, 4); std::fill_n(reinterpret_cast<uint32_t*>(dst), n, v); break; }
    case 8: { uint64_t v; std::memcpy(&v, value, 8); std::fill_n(reinterpret_cast<uint64_t*>(dst), n, v); break; }
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * width, value, width);
  }
}

template <class T>
void IotaRuns(uint8_t* dst, const std::vector<ExprRun>& runs) {
  T* d = reinterpret_cast<T*>(dst);
  for (const ExprRun& r : runs) {
    T* __restrict dr = d + r.pos;
    const int64_t len = r.len, base = r.base, st = r.stride;
    for (int64_t t = 0; t < len; ++t) dr[t] = FromInt64<T>(base + st * t);
  }
}

}  // namespace

// Runs ops of one phase. `runs` are the per-map run lists of this phase.
//
// Note [Uniform block values]
//   With `u` (per value id; EvalBlock passes the scratch's), a value whose block is one element
//   repeated -- a read along a single stride-0 run covering the block (a per-row value broadcast
//   along a row that holds the whole block), or an op of such values only -- is not
//   materialized: ptrs[v] points to that one element and u[v] == kUniform. An op of uniform
//   values only computes one element; a binary op with one uniform operand runs its scalar loop
//   (fn_sa / fn_sb) when it has one; any other consumer first fills the value's buffer
//   (Materialize). Invariants are uniform and already filled (kUniformFull). Roots are
//   materialized at the end of the block. Without `u` (Prepare, NewScratch) every value is full.
struct ExprExec {
  static constexpr uint8_t kFull = 0, kUniformFull = 1, kUniform = 3;

  static void Materialize(int v, int width, int64_t n, std::vector<void*>& ptrs,
                          const std::vector<void*>& buffers, uint8_t* u, void* target = nullptr) {
    if (u == nullptr || u[v] != kUniform) return;
    uint8_t* dst = static_cast<uint8_t*>(target ? target : buffers[v]);
    alignas(16) uint8_t value[16];
    std::memcpy(value, ptrs[v], width);
    Fill(dst, value, width, n);
    ptrs[v] = dst;
    u[v] = kUniformFull;
  }

  static void Run(const ExprProgram& p, const std::vector<ExprOp>& ops, int64_t start, int64_t n,
                  std::span<const void* const> inputs, const std::vector<void*>& inv,
                  std::vector<std::vector<ExprRun>>& runs, std::vector<void*>& ptrs,
                  const std::vector<void*>& buffers, uint8_t* u = nullptr,
                  bool block_ops = false) {
    auto width_of = [&](int v) { return PrimitiveByteWidth(p.value_types_[v]); };
    // The block's index when its runs were precomputed (Note [Precomputed block runs]).
    int64_t pre_block = -1;
    if (block_ops && p.pre_blocks_ > 0 && start % p.block_ == 0) {
      const int64_t b = start / p.block_;
      if (b < p.pre_blocks_ && n == std::min(p.block_, p.loop_elements_ - start)) pre_block = b;
    }
    for (const ExprOp& op : ops) {
      switch (op.kind) {
        case ExprOp::Kind::kMap: {
          if (pre_block >= 0 && p.pre_slot_[op.map] >= 0) {
            const int64_t k = p.pre_slot_[op.map] * p.pre_blocks_ + pre_block;
            const ExprRun* src = p.pre_runs_.data() + p.pre_offset_[k];
            const size_t cnt = p.pre_offset_[k + 1] - p.pre_offset_[k];
            std::vector<ExprRun>& dst = runs[op.map];
            if (cnt == 1) {  // the common case, without a call to memmove
              if (dst.size() != 1) dst.resize(1);
              dst[0] = *src;
            } else {
              dst.assign(src, src + cnt);
            }
            break;
          }
          const ExprMap& m = *p.maps_[op.map];
          static const std::vector<ExprRun> kNone;
          ComputeMapRuns(m, m.parent >= 0 ? runs[m.parent] : kNone, start, n, inv, runs[op.map]);
          break;
        }
        case ExprOp::Kind::kRead: {
          const uint8_t* src = static_cast<const uint8_t*>(op.input >= 0 ? inputs[op.input] : op.data);
          const std::vector<ExprRun>& rs = runs[op.map];
          const bool one = rs.size() == 1 && rs[0].pos == 0 && rs[0].len == n;
          if (u) u[op.out] = kFull;
          if (one && (rs[0].stride == 1 || n == 1)) {
            ptrs[op.out] = const_cast<uint8_t*>(src) + rs[0].base * op.width;
          } else if (one && rs[0].stride == 0 && u) {
            ptrs[op.out] = const_cast<uint8_t*>(src) + rs[0].base * op.width;
            u[op.out] = kUniform;
          } else {
            if (!op.gather_in_place) ptrs[op.out] = buffers[op.out];
            GatherRuns(src, static_cast<uint8_t*>(ptrs[op.out]), op.width, rs);
          }
          break;
        }
        case ExprOp::Kind::kIota: {
          if (u) u[op.out] = kFull;
          uint8_t* dst = static_cast<uint8_t*>(ptrs[op.out]);
          ArrayTypeSwitch(op.type, [&](auto tag) {
            using T = NativeTypeOf<decltype(tag)::value>;
            IotaRuns<T>(dst, runs[op.map]);
          });
          break;
        }
        case ExprOp::Kind::kCompute: {
          if (u) {
            bool all = true;
            for (int k = 0; k < op.num_in; ++k) all &= u[op.in[k]] != kFull;
            if (all && op.num_in > 0) {
              // One element: uniform inputs have their value at element 0.
              if (op.fn) op.fn(op, 1, ptrs.data());
              else GenericElementwiseBlock(op, 1, ptrs.data());
              u[op.out] = kUniform;
              break;
            }
            u[op.out] = kFull;
            if (op.num_in == 2) {
              if (op.fn_sa && u[op.in[0]] != kFull && u[op.in[1]] == kFull) {
                op.fn_sa(op, n, ptrs.data());
                break;
              }
              if (op.fn_sb && u[op.in[1]] != kFull && u[op.in[0]] == kFull) {
                op.fn_sb(op, n, ptrs.data());
                break;
              }
            }
            for (int k = 0; k < op.num_in; ++k)
              Materialize(op.in[k], op.in_width[k] ? op.in_width[k] : width_of(op.in[k]), n, ptrs,
                          buffers, u);
          }
          if (op.fn) op.fn(op, n, ptrs.data());
          else GenericElementwiseBlock(op, n, ptrs.data());
          break;
        }
        case ExprOp::Kind::kPad: {
          if (u) {
            u[op.out] = kFull;
            if (op.values[0] >= 0) Materialize(op.values[0], op.width, n, ptrs, buffers, u);
          }
          uint8_t* dst = static_cast<uint8_t*>(ptrs[op.out]);
          Fill(dst, inv[op.values[1]], op.width, n);
          if (op.values[0] >= 0)
            SelectRuns(static_cast<const uint8_t*>(ptrs[op.values[0]]), dst, op.width,
                       runs[op.maps[0]]);
          break;
        }
        case ExprOp::Kind::kConcat: {
          if (u) {
            u[op.out] = kFull;
            for (int v : op.values) Materialize(v, op.width, n, ptrs, buffers, u);
          }
          uint8_t* dst = static_cast<uint8_t*>(ptrs[op.out]);
          for (size_t k = 0; k < op.values.size(); ++k)
            SelectRuns(static_cast<const uint8_t*>(ptrs[op.values[k]]), dst, op.width,
                       runs[op.maps[k]]);
          break;
        }
        case ExprOp::Kind::kChain: {
          if (u) {
            bool all = true;
            for (int v : op.values)
              if (v >= 0) all &= u[v] != kFull;
            if (all) {  // one element, as for kCompute
              ChainBlockF32(op, 1, ptrs.data(), u);
              u[op.out] = kUniform;
              break;
            }
            u[op.out] = kFull;
          }
          ChainBlockF32(op, n, ptrs.data(), u);
          break;
        }
        case ExprOp::Kind::kSplat:
          if (u) u[op.out] = kUniformFull;
          Fill(static_cast<uint8_t*>(ptrs[op.out]), inv[op.in[0]], op.width, n);
          break;
      }
    }
  }
};

// Note [Precomputed block runs]
//   A block map's runs depend on the block (start, n) and, for dynamic-slice maps, on invariant
//   start indices. Every kernel run walks the same blocks (a row-tiled chain runs its tile
//   kernels once per tile), and recomputing the runs -- divisions down each map's dimensions,
//   for every map of a broadcast/reshape chain -- was ~15% of layernorm's single-core time. So
//   at compile time the runs of every block map without a dynamic start (itself or up its
//   parent chain) are computed once for every block [b * block, min(+block, end)) when the
//   program has at most kMaxPreBlocks blocks and they fit in kMaxPreRuns runs; EvalBlock on
//   exactly such a block copies them (one short vector assign). Other blocks (the partial-row
//   blocks of column and split-row reductions) compute as before.
void ExprProgram::PrecomputeBlockRuns() {
  constexpr int64_t kMaxPreBlocks = 8192;
  constexpr int64_t kMaxPreRuns = int64_t{1} << 15;
  pre_blocks_ = 0;
  pre_slot_.assign(maps_.size(), -1);
  const int64_t blocks = (loop_elements_ + block_ - 1) / block_;
  if (blocks <= 0 || blocks > kMaxPreBlocks) return;
  // Block maps whose runs need no invariant value, in block-op order (parents first).
  std::vector<int> slots_maps;
  std::vector<bool> ok(maps_.size(), false);
  for (const ExprOp& op : block_ops_) {
    if (op.kind != ExprOp::Kind::kMap) continue;
    const ExprMap& m = *maps_[op.map];
    bool good = m.dyn.empty() && (m.parent < 0 || ok[m.parent]);
    if (m.kind == MapKind::kLoop || m.kind == MapKind::kScalar) good = m.dyn.empty();
    if (!good) continue;
    ok[op.map] = true;
    pre_slot_[op.map] = static_cast<int>(slots_maps.size());
    slots_maps.push_back(op.map);
  }
  if (slots_maps.empty()) return;
  const int64_t nslots = static_cast<int64_t>(slots_maps.size());
  std::vector<std::vector<ExprRun>> per(nslots * blocks);
  std::vector<std::vector<ExprRun>> runs(maps_.size());
  static const std::vector<void*> kNoInv;
  static const std::vector<ExprRun> kNone;
  int64_t total = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t start = b * block_, n = std::min(block_, loop_elements_ - start);
    for (int64_t k = 0; k < nslots; ++k) {
      const ExprMap& m = *maps_[slots_maps[k]];
      ComputeMapRuns(m, m.parent >= 0 ? runs[m.parent] : kNone, start, n, kNoInv,
                     runs[slots_maps[k]]);
      per[k * blocks + b] = runs[slots_maps[k]];
      total += static_cast<int64_t>(runs[slots_maps[k]].size());
      if (total > kMaxPreRuns) {
        pre_slot_.assign(maps_.size(), -1);
        return;
      }
    }
  }
  pre_offset_.assign(1, 0);
  pre_runs_.clear();
  pre_runs_.reserve(total);
  for (const std::vector<ExprRun>& r : per) {
    pre_runs_.insert(pre_runs_.end(), r.begin(), r.end());
    pre_offset_.push_back(static_cast<uint32_t>(pre_runs_.size()));
  }
  pre_blocks_ = blocks;
}

ExprProgram::~ExprProgram() = default;

PrimitiveType ExprProgram::root_type(int r) const { return value_types_[root_values_[r]]; }

int64_t ExprProgram::num_ops() const { return static_cast<int64_t>(block_ops_.size()); }

StatusOr<ExprRunState> ExprProgram::Prepare(std::span<const void* const> inputs) const {
  ExprRunState s;
  s.inputs_ = inputs;
  s.storage_.assign(static_cast<size_t>(num_values_) * 16, 0);
  s.ptrs_.assign(num_values_, nullptr);
  for (int64_t v = 0; v < num_values_; ++v)
    if (value_invariant_[v]) s.ptrs_[v] = s.storage_.data() + v * 16;
  if (!invariant_ops_.empty()) {
    std::vector<std::vector<ExprRun>> runs(maps_.size());
    std::vector<void*> buffers = s.ptrs_;
    ExprExec::Run(*this, invariant_ops_, 0, 1, inputs, s.ptrs_, runs, s.ptrs_, buffers);
    // Reads may have pointed into the inputs; keep a copy in the state's own storage so the
    // values stay put for the splats.
    for (int64_t v = 0; v < num_values_; ++v) {
      if (!value_invariant_[v] || s.ptrs_[v] == buffers[v]) continue;
      std::memcpy(buffers[v], s.ptrs_[v], PrimitiveByteWidth(value_types_[v]));
      s.ptrs_[v] = buffers[v];
    }
  }
  return s;
}

// Note [Recycled scratch]
//   A kernel makes a scratch per Run and thread (a row-tiled chain: per tile and kernel), and
//   making one was a handful of allocations plus zero-filling the block buffers (~5% of
//   softmax's single-core time in malloc, free and memset). A destroyed scratch leaves its
//   vectors in a small per-thread cache keyed by program id; NewScratch of the same program on
//   that thread takes them back, keeping the buffers' contents (every op writes its block
//   before any op reads it) and re-deriving the pointers.
namespace {
struct CachedScratch {
  uint64_t program_id = 0;
  std::vector<uint8_t> storage;
  std::vector<void*> ptrs, buffers;
  std::vector<std::vector<ExprRun>> runs;
  std::vector<uint8_t> uniform;
};
constexpr size_t kScratchCacheEntries = 32;
thread_local std::vector<CachedScratch> scratch_cache;
}  // namespace

ExprScratch& ExprScratch::operator=(ExprScratch&& other) noexcept {
  if (this == &other) return *this;
  Recycle();
  program_id_ = std::exchange(other.program_id_, 0);
  state_ = other.state_;
  storage_ = std::move(other.storage_);
  ptrs_ = std::move(other.ptrs_);
  buffers_ = std::move(other.buffers_);
  runs_ = std::move(other.runs_);
  uniform_ = std::move(other.uniform_);
  return *this;
}

void ExprScratch::Recycle() {
  if (program_id_ == 0) return;
  if (scratch_cache.size() >= kScratchCacheEntries) scratch_cache.erase(scratch_cache.begin());
  scratch_cache.push_back({program_id_, std::move(storage_), std::move(ptrs_), std::move(buffers_),
                           std::move(runs_), std::move(uniform_)});
  program_id_ = 0;
}

ExprScratch ExprProgram::NewScratch(const ExprRunState& state) const {
  ExprScratch s;
  s.state_ = &state;
  bool recycled = false;
  for (size_t i = scratch_cache.size(); i-- > 0;) {
    CachedScratch& c = scratch_cache[i];
    if (c.program_id != id_) continue;
    s.storage_ = std::move(c.storage);
    s.ptrs_ = std::move(c.ptrs);
    s.buffers_ = std::move(c.buffers);
    s.runs_ = std::move(c.runs);
    s.uniform_ = std::move(c.uniform);
    scratch_cache.erase(scratch_cache.begin() + static_cast<std::ptrdiff_t>(i));
    recycled = s.storage_.size() == static_cast<size_t>(scratch_bytes_) + 64 &&
               s.runs_.size() == maps_.size();
    break;
  }
  s.program_id_ = id_;
  if (!recycled) s.storage_.assign(static_cast<size_t>(scratch_bytes_) + 64, 0);
  uint8_t* base = s.storage_.data();
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  s.ptrs_ = state.ptrs_;
  s.buffers_.assign(num_values_, nullptr);
  for (int64_t v = 0; v < num_values_; ++v) {
    if (value_invariant_[v] || value_buffer_[v] < 0) continue;
    s.buffers_[v] = base + buffer_offsets_[value_buffer_[v]];
    s.ptrs_[v] = s.buffers_[v];
  }
  if (recycled) {
    for (std::vector<ExprRun>& r : s.runs_) r.clear();
  } else {
    s.runs_.assign(maps_.size(), {});
  }
  ExprExec::Run(*this, splat_ops_, 0, block_, state.inputs_, state.ptrs_, s.runs_, s.ptrs_,
                s.buffers_);
  s.uniform_.assign(num_values_, ExprExec::kFull);
  for (int64_t v = 0; v < num_values_; ++v)
    if (value_invariant_[v]) s.uniform_[v] = ExprExec::kUniformFull;
  for (const ExprOp& op : splat_ops_) s.uniform_[op.out] = ExprExec::kUniformFull;
  return s;
}

void ExprProgram::EvalBlock(ExprScratch& s, int64_t start, int64_t n, std::span<void* const> dest,
                            std::span<const void*> results) const {
  const int nr = num_roots();
  // Roots computed by a block op write straight into their destination (a value shared by
  // several roots: the first one's; the others get a copy below).
  for (int r = 0; r < nr; ++r) {
    const int v = root_block_values_[r];
    if (value_invariant_[v] || value_buffer_[v] < 0) continue;
    s.ptrs_[v] = s.buffers_[v];
  }
  if (!dest.empty()) {
    for (int r = 0; r < nr; ++r) {
      const int v = root_block_values_[r];
      if (value_invariant_[v] || value_buffer_[v] < 0 || !dest[r] || !root_direct_[r]) continue;
      if (s.ptrs_[v] == s.buffers_[v]) s.ptrs_[v] = dest[r];
    }
  }
  ExprExec::Run(*this, block_ops_, start, n, s.state_->inputs_, s.state_->ptrs_, s.runs_, s.ptrs_,
                s.buffers_, s.uniform_.data(), /*block_ops=*/true);
  for (int r = 0; r < nr; ++r) {
    const int v = root_block_values_[r];
    if (s.uniform_[v] == ExprExec::kUniform) {
      // Fill the destination (or the value's buffer) straight from the one element.
      void* target = !dest.empty() && dest[r] ? dest[r] : s.buffers_[v];
      ExprExec::Materialize(v, PrimitiveByteWidth(value_types_[v]), n, s.ptrs_, s.buffers_,
                            s.uniform_.data(), target);
    }
    void* src = s.ptrs_[v];
    if (!dest.empty() && dest[r]) {
      if (src != dest[r])
        std::memcpy(dest[r], src, static_cast<size_t>(n) * PrimitiveByteWidth(value_types_[v]));
      results[r] = dest[r];
    } else {
      results[r] = src;
    }
  }
}

}  // namespace kiln::cpu::internal
