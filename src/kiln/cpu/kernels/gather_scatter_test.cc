// Gather and scatter kernels against the evaluator: JAX's common forms (embedding lookup, take,
// take_along_axis with batching dims, x.at[i].add/set/min/max/mul), general dimension numbers,
// index types, repeated and out-of-range indices, variadic scatters and non-trivial combiners.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/kernel_test_util.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cpu {
namespace {

using testing::CheckOptions;

// Runs the root of `hlo` on random operands whose index operand (the one named "i") holds
// values in [lo, hi], with and without a pool and a small parallel threshold.
void CheckIndexed(const std::string& hlo, int64_t lo, int64_t hi, uint64_t seed = 1) {
  std::unique_ptr<HloModule> m = testing::Parse(hlo);
  ASSERT_NE(m, nullptr);
  const HloInstruction* instr = testing::Find(*m);
  std::vector<Literal> ops;
  for (int64_t i = 0; i < instr->operand_count(); ++i) {
    const Shape& s = instr->operand(i)->shape();
    if (instr->operand(i)->name() != "i") {
      ops.push_back(MakeRandomLiteral(s, seed, i));
      continue;
    }
    Literal l(s);
    std::mt19937_64 rng(seed * 77 + i);
    std::uniform_int_distribution<int64_t> dist(lo, hi);
    const int64_t n = s.num_elements();
    const int w = PrimitiveByteWidth(s.element_type());
    for (int64_t e = 0; e < n; ++e) {
      int64_t v = dist(rng);
      if (!IsSignedIntegralType(s.element_type()) && v < 0) v = hi + 1 - v;  // large instead
      std::memcpy(l.untyped_data() + e * w, &v, w);  // little-endian truncation
    }
    ops.push_back(std::move(l));
  }
  for (bool pool : {true, false}) {
    for (int64_t min_par : {int64_t{16}, int64_t{1} << 20}) {
      CheckOptions o;
      o.with_pool = pool;
      o.kernel.min_parallel_elements = min_par;
      std::vector<Literal> copy;
      for (const Literal& l : ops) copy.push_back(l);
      testing::ExpectMatchesEvaluator(*instr, o, std::move(copy));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

std::string Entry(std::string_view body) { return StrCat("ENTRY e {\n ", body, "\n}\n"); }

TEST(GatherKernelTest, Forms) {
  struct Case {
    const char* body;
    int64_t lo, hi;
  };
  const Case cases[] = {
      // embedding lookup
      {"x = f32[50,16] parameter(0)\n i = s32[7,1] parameter(1)\n"
       " ROOT g = f32[7,16] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=1, slice_sizes={1,16}",
       -3, 53},
      // jnp.take(x, i, axis=1): the innermost output dim is a batch dim
      {"x = f32[5,30] parameter(0)\n i = s32[4] parameter(1)\n"
       " ROOT g = f32[5,4] gather(x, i), offset_dims={0}, collapsed_slice_dims={1},"
       " start_index_map={1}, index_vector_dim=1, slice_sizes={5,1}",
       -2, 32},
      // take_along_axis with batching dims
      {"x = f32[3,10] parameter(0)\n i = s32[3,4,1] parameter(1)\n"
       " ROOT g = f32[3,4] gather(x, i), offset_dims={}, collapsed_slice_dims={1},"
       " operand_batching_dims={0}, start_indices_batching_dims={0}, start_index_map={1},"
       " index_vector_dim=2, slice_sizes={1,1}",
       0, 9},
      // 2-element index vectors, windows with every dim kept
      {"x = f32[8,9,5] parameter(0)\n i = s32[2,3,2] parameter(1)\n"
       " ROOT g = f32[2,3,2,3,5] gather(x, i), offset_dims={2,3,4}, collapsed_slice_dims={},"
       " start_index_map={0,1}, index_vector_dim=2, slice_sizes={2,3,5}",
       -2, 9},
      // index_vector_dim first, interleaved offset dims, reversed start_index_map
      {"x = f32[6,7,4] parameter(0)\n i = s32[2,5,3] parameter(1)\n"
       " ROOT g = f32[2,5,3,3] gather(x, i), offset_dims={0,3}, collapsed_slice_dims={1},"
       " start_index_map={1,0}, index_vector_dim=0, slice_sizes={2,1,3}",
       -1, 8},
      // index types
      {"x = bf16[20,3] parameter(0)\n i = u8[6] parameter(1)\n"
       " ROOT g = bf16[6,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}",
       -1, 25},
      {"x = c128[20,3] parameter(0)\n i = s64[6] parameter(1)\n"
       " ROOT g = c128[6,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}",
       -5, 25},
      {"x = s8[20,3] parameter(0)\n i = u64[6] parameter(1)\n"
       " ROOT g = s8[6,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}",
       -2, 25},
      {"x = pred[20,3] parameter(0)\n i = s8[6] parameter(1)\n"
       " ROOT g = pred[6,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}",
       -2, 25},
      // scalar result, empty indices, size-1 dims
      {"x = f32[9] parameter(0)\n i = s32[1] parameter(1)\n"
       " ROOT g = f32[] gather(x, i), offset_dims={}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=0, slice_sizes={1}",
       -1, 10},
      {"x = f32[9,4] parameter(0)\n i = s32[0,1] parameter(1)\n"
       " ROOT g = f32[0,4] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}",
       0, 8},
      {"x = f32[1,1,7] parameter(0)\n i = s32[5,1,2] parameter(1)\n"
       " ROOT g = f32[5,1,1,7] gather(x, i), offset_dims={2,3}, collapsed_slice_dims={0},"
       " start_index_map={0,2}, index_vector_dim=2, slice_sizes={1,1,7}",
       -1, 2},
      // an empty operand (collapsed dimension of size 0): zeros, nothing read
      {"x = f32[0,2] parameter(0)\n i = s32[3] parameter(1)\n"
       " ROOT g = f32[3,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=1, slice_sizes={0,2}",
       0, 2},
      // large: parallel rows
      {"x = f32[1000,64] parameter(0)\n i = s32[3000,1] parameter(1)\n"
       " ROOT g = f32[3000,64] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
       " start_index_map={0}, index_vector_dim=1, slice_sizes={1,64}",
       0, 999},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    CheckIndexed(Entry(c.body), c.lo, c.hi);
    if (HasFailure()) return;
  }
}

const char* kCombiners = R"(
add_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }
add_s32 { a = s32[] parameter(0)  b = s32[] parameter(1)  ROOT r = s32[] add(b, a) }
add_bf16 { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT r = bf16[] add(a, b) }
max_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] maximum(a, b) }
min_f64 { a = f64[] parameter(0)  b = f64[] parameter(1)  ROOT r = f64[] minimum(a, b) }
mul_s64 { a = s64[] parameter(0)  b = s64[] parameter(1)  ROOT r = s64[] multiply(a, b) }
set_f32 { a = f32[] parameter(0)  ROOT b = f32[] parameter(1) }
sub_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] subtract(b, a) }
fma_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  c = f32[] constant(0.5)
          m = f32[] multiply(a, c)  ROOT r = f32[] add(m, b) }
or_pred { a = pred[] parameter(0)  b = pred[] parameter(1)  ROOT r = pred[] or(a, b) }
pair { a0 = f32[] parameter(0)  a1 = s32[] parameter(1)  b0 = f32[] parameter(2)
       b1 = s32[] parameter(3)  s = f32[] add(a0, b0)  t = s32[] maximum(a1, b1)
       ROOT r = (f32[], s32[]) tuple(s, t) }
set_pair { a0 = f32[] parameter(0)  a1 = s32[] parameter(1)  b0 = f32[] parameter(2)
           b1 = s32[] parameter(3)  ROOT r = (f32[], s32[]) tuple(b0, b1) }
)";

TEST(ScatterKernelTest, Forms) {
  struct Case {
    const char* body;
    int64_t lo, hi;
  };
  const Case cases[] = {
      // x.at[i].add(u) on rows (embedding gradient), repeated and out-of-range indices
      {"x = f32[40,16] parameter(0)\n i = s32[30,1] parameter(1)\n u = f32[30,16] parameter(2)\n"
       " ROOT s = f32[40,16] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32",
       -2, 42},
      // element scatters of every combiner kind
      {"x = s32[25] parameter(0)\n i = s32[60] parameter(1)\n u = s32[60] parameter(2)\n"
       " ROOT s = s32[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_s32",
       -1, 25},
      {"x = bf16[25] parameter(0)\n i = s32[60] parameter(1)\n u = bf16[60] parameter(2)\n"
       " ROOT s = bf16[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_bf16",
       0, 24},
      {"x = f32[25] parameter(0)\n i = s32[60] parameter(1)\n u = f32[60] parameter(2)\n"
       " ROOT s = f32[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=max_f32",
       0, 24},
      {"x = f64[25] parameter(0)\n i = s32[60] parameter(1)\n u = f64[60] parameter(2)\n"
       " ROOT s = f64[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=min_f64",
       0, 24},
      {"x = s64[25] parameter(0)\n i = s32[60] parameter(1)\n u = s64[60] parameter(2)\n"
       " ROOT s = s64[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=mul_s64",
       0, 24},
      {"x = f32[25] parameter(0)\n i = s32[60] parameter(1)\n u = f32[60] parameter(2)\n"
       " ROOT s = f32[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set_f32",
       -1, 25},
      // non-commutative combiners: order of repeated indices matters
      {"x = f32[25] parameter(0)\n i = s32[60] parameter(1)\n u = f32[60] parameter(2)\n"
       " ROOT s = f32[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sub_f32",
       0, 24},
      {"x = f32[25] parameter(0)\n i = s32[60] parameter(1)\n u = f32[60] parameter(2)\n"
       " ROOT s = f32[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=fma_f32",
       0, 24},
      {"x = pred[25] parameter(0)\n i = u32[60] parameter(1)\n u = pred[60] parameter(2)\n"
       " ROOT s = pred[25] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=or_pred",
       -1, 26},
      // windows: 2-d index vectors into a 3-d operand, windows partly out of range (skipped)
      {"x = f32[8,9,6] parameter(0)\n i = s32[4,2] parameter(1)\n u = f32[4,3,6] parameter(2)\n"
       " ROOT s = f32[8,9,6] scatter(x, i, u), update_window_dims={1,2},"
       " inserted_window_dims={0}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1,"
       " to_apply=add_f32",
       -1, 8},
      // index_vector_dim first, window dims interleaved with scatter dims
      {"x = f32[7,5,4] parameter(0)\n i = s32[2,3,2] parameter(1)\n"
       " u = f32[3,3,2,2] parameter(2)\n"
       " ROOT s = f32[7,5,4] scatter(x, i, u), update_window_dims={1,3},"
       " inserted_window_dims={1}, scatter_dims_to_operand_dims={2,1}, index_vector_dim=0,"
       " to_apply=add_f32",
       -1, 6},
      // batching dims (take_along_axis gradient)
      {"x = f32[3,10] parameter(0)\n i = s32[3,4,1] parameter(1)\n u = f32[3,4] parameter(2)\n"
       " ROOT s = f32[3,10] scatter(x, i, u), update_window_dims={}, inserted_window_dims={1},"
       " input_batching_dims={0}, scatter_indices_batching_dims={0},"
       " scatter_dims_to_operand_dims={1}, index_vector_dim=2, to_apply=add_f32",
       0, 9},
      // variadic: add/max pair and replace pair
      {"x = f32[12,3] parameter(0)\n y = s32[12,3] parameter(1)\n i = s32[9] parameter(2)\n"
       " u = f32[9,3] parameter(3)\n v = s32[9,3] parameter(4)\n"
       " ROOT s = (f32[12,3], s32[12,3]) scatter(x, y, i, u, v), update_window_dims={1},"
       " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
       " to_apply=pair",
       -1, 12},
      {"x = f32[12,3] parameter(0)\n y = s32[12,3] parameter(1)\n i = s32[9] parameter(2)\n"
       " u = f32[9,3] parameter(3)\n v = s32[9,3] parameter(4)\n"
       " ROOT s = (f32[12,3], s32[12,3]) scatter(x, y, i, u, v), update_window_dims={1},"
       " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
       " to_apply=set_pair",
       -1, 12},
      // empty updates, size-1 operand, window larger than the operand
      {"x = f32[5,3] parameter(0)\n i = s32[0,1] parameter(1)\n u = f32[0,3] parameter(2)\n"
       " ROOT s = f32[5,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32",
       0, 4},
      {"x = f32[1] parameter(0)\n i = s32[4] parameter(1)\n u = f32[4] parameter(2)\n"
       " ROOT s = f32[1] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32",
       -1, 1},
      {"x = f32[2,3] parameter(0)\n i = s32[2,1] parameter(1)\n u = f32[2,4] parameter(2)\n"
       " ROOT s = f32[2,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32",
       0, 1},
      // large: threads own operand ranges
      {"x = f32[500,64] parameter(0)\n i = s32[2000,1] parameter(1)\n"
       " u = f32[2000,64] parameter(2)\n"
       " ROOT s = f32[500,64] scatter(x, i, u), update_window_dims={1},"
       " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
       " to_apply=add_f32",
       0, 499},
      {"x = f32[3000] parameter(0)\n i = s32[20000] parameter(1)\n u = f32[20000] parameter(2)\n"
       " ROOT s = f32[3000] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
       " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sub_f32",
       -10, 3010},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    CheckIndexed(StrCat(kCombiners, Entry(c.body)), c.lo, c.hi);
    if (HasFailure()) return;
  }
}

// Random dimension numbers: operand rank 1-3, random start/scatter maps, collapsed/inserted and
// batching dims, index_vector_dim anywhere (or implicit), offset/window dims anywhere in the
// result/updates, size-0 and size-1 dims, windows of any size up to the operand's.
struct RandomIndexed {
  std::mt19937_64 rng;
  explicit RandomIndexed(uint64_t seed) : rng(seed) {}
  int64_t Pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  static std::string List(const std::vector<int64_t>& v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += StrCat(i ? "," : "", v[i]);
    return s + "}";
  }
  static std::string Dims(const std::vector<int64_t>& v) {
    std::string s = List(v);
    return "[" + s.substr(1, s.size() - 2) + "]";
  }

  // Returns the HLO of a gather (scatter when `scatter`) and the largest operand dim.
  std::string Make(bool scatter, int64_t* max_dim) {
    const int64_t orank = Pick(1, 3);
    std::vector<int64_t> od(orank);
    for (int64_t& d : od) d = Pick(1, 6);
    *max_dim = *std::max_element(od.begin(), od.end());
    std::vector<int64_t> perm(orank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    // perm[0] may become a batching dim; the start map takes a random non-empty subset of the
    // others, in random order.
    const bool batching = orank > 1 && Pick(0, 2) == 0;
    std::vector<int64_t> obatch;
    if (batching) obatch.push_back(perm[0]);
    std::vector<int64_t> smap;
    for (int64_t i = batching ? 1 : 0; i < orank; ++i)
      if (smap.empty() || Pick(0, 1)) smap.push_back(perm[i]);
    std::shuffle(smap.begin(), smap.end(), rng);
    std::vector<int64_t> slice(orank);
    std::vector<int64_t> collapsed;
    for (int64_t d = 0; d < orank; ++d) {
      const bool is_batch = std::find(obatch.begin(), obatch.end(), d) != obatch.end();
      if (is_batch) {
        slice[d] = 1;
      } else if (Pick(0, 2) == 0) {
        slice[d] = 1;
        collapsed.push_back(d);
      } else {
        slice[d] = Pick(0, 5) == 0 ? 0 : Pick(1, od[d]);
      }
    }
    std::vector<int64_t> window_sizes;
    for (int64_t d = 0; d < orank; ++d)
      if (std::find(collapsed.begin(), collapsed.end(), d) == collapsed.end() &&
          std::find(obatch.begin(), obatch.end(), d) == obatch.end())
        window_sizes.push_back(slice[d]);
    // Indices: batch dims (with the batching dim's size where it is one), ivd anywhere.
    const int64_t v = static_cast<int64_t>(smap.size());
    std::vector<int64_t> bdims;
    const int64_t nb = Pick(0, 2) + (batching ? 1 : 0);
    for (int64_t i = 0; i < nb; ++i) bdims.push_back(Pick(0, 6) == 0 ? Pick(0, 1) : Pick(1, 5));
    int64_t batch_pos = -1;
    if (batching) {
      batch_pos = Pick(0, nb - 1);
      bdims[batch_pos] = od[obatch[0]];
    }
    const bool implicit = v == 1 && Pick(0, 1);
    const int64_t ivd = implicit ? nb : Pick(0, nb);
    std::vector<int64_t> idims = bdims;
    if (!implicit) idims.insert(idims.begin() + ivd, v);
    std::vector<int64_t> ibatch;
    if (batching) ibatch.push_back(batch_pos < ivd || implicit ? batch_pos : batch_pos + 1);
    // Result / updates: window dims at random positions.
    const int64_t nw = static_cast<int64_t>(window_sizes.size());
    const int64_t rrank = nb + nw;
    std::vector<int64_t> pos(rrank);
    std::iota(pos.begin(), pos.end(), 0);
    std::shuffle(pos.begin(), pos.end(), rng);
    std::vector<int64_t> wpos(pos.begin(), pos.begin() + nw);
    std::sort(wpos.begin(), wpos.end());
    std::vector<int64_t> rdims(rrank);
    for (int64_t r = 0, w = 0, b = 0; r < rrank; ++r) {
      if (w < nw && wpos[w] == r) rdims[r] = window_sizes[w++];
      else rdims[r] = bdims[b++];
    }
    const std::string ty = Pick(0, 1) ? "s32" : "s64";
    if (!scatter) {
      return StrCat("ENTRY e {\n x = f32", Dims(od), " parameter(0)\n i = ", ty, Dims(idims),
                    " parameter(1)\n ROOT g = f32", Dims(rdims), " gather(x, i), offset_dims=",
                    List(wpos), ", collapsed_slice_dims=", List(collapsed),
                    ", start_index_map=", List(smap), ", operand_batching_dims=", List(obatch),
                    ", start_indices_batching_dims=", List(ibatch), ", index_vector_dim=", ivd,
                    ", slice_sizes=", List(slice), "\n}\n");
    }
    return StrCat(kCombiners, "ENTRY e {\n x = f32", Dims(od), " parameter(0)\n i = ", ty,
                  Dims(idims), " parameter(1)\n u = f32", Dims(rdims),
                  " parameter(2)\n ROOT s = f32", Dims(od),
                  " scatter(x, i, u), update_window_dims=", List(wpos),
                  ", inserted_window_dims=", List(collapsed),
                  ", scatter_dims_to_operand_dims=", List(smap), ", input_batching_dims=",
                  List(obatch), ", scatter_indices_batching_dims=", List(ibatch),
                  ", index_vector_dim=", ivd, ", to_apply=", Pick(0, 1) ? "add_f32" : "sub_f32",
                  "\n}\n");
  }
};

TEST(GatherKernelTest, Random) {
  RandomIndexed r(7);
  for (int iter = 0; iter < 150; ++iter) {
    int64_t max_dim = 0;
    const std::string hlo = r.Make(false, &max_dim);
    SCOPED_TRACE(hlo);
    CheckIndexed(hlo, -1, max_dim, iter);
    if (HasFailure()) return;
  }
}

TEST(ScatterKernelTest, Random) {
  RandomIndexed r(8);
  for (int iter = 0; iter < 150; ++iter) {
    int64_t max_dim = 0;
    const std::string hlo = r.Make(true, &max_dim);
    SCOPED_TRACE(hlo);
    CheckIndexed(hlo, -1, max_dim, iter);
    if (HasFailure()) return;
  }
}

TEST(ScatterKernelTest, InPlace) {
  std::unique_ptr<HloModule> m = testing::Parse(StrCat(
      kCombiners,
      Entry("x = f32[40] parameter(0)\n i = s32[30] parameter(1)\n u = f32[30] parameter(2)\n"
            " ROOT s = f32[40] scatter(x, i, u), update_window_dims={},"
            " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
            " to_apply=add_f32")));
  ASSERT_NE(m, nullptr);
  const HloInstruction* instr = testing::Find(*m);
  StatusOr<std::unique_ptr<CpuKernel>> k = CreateCpuKernel(*instr);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_TRUE((*k)->SupportsInPlace(0, 0));
  std::vector<float> x(40, 1.0f), u(30, 2.0f);
  std::vector<int32_t> idx(30);
  for (int i = 0; i < 30; ++i) idx[i] = (i * 7) % 45 - 2;  // some out of range
  std::vector<float> want = x;
  for (int i = 0; i < 30; ++i)
    if (idx[i] >= 0 && idx[i] < 40) want[idx[i]] += u[i];
  const ArrayView in[3] = {{x.data(), instr->operand(0)->shape()},
                           {idx.data(), instr->operand(1)->shape()},
                           {u.data(), instr->operand(2)->shape()}};
  const ArrayView out[1] = {{x.data(), instr->shape()}};
  KernelContext ctx;
  ctx.pool = testing::TestPool();
  ASSERT_TRUE((*k)->Run(in, out, ctx).ok());
  EXPECT_EQ(x, want);
}

}  // namespace
}  // namespace kiln::cpu
