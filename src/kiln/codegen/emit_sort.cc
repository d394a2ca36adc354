// The sort emitter: a comparison sort with any comparator, for the sorts the library radix sort
// (cuda/libs/sort.h) does not take -- multi-key and lexicographic comparators (jnp.lexsort,
// complex numbers), comparators over several operands, custom orders.
//
// One block sorts one row (the minor dimension of row-major operands; the GPU compiler moves
// other sort dimensions there first). The block sorts a permutation of the row's positions
// with a bottom-up merge sort: runs of width 1, 2, 4, ... are merged pairwise; every element
// finds its place in the merged run by a binary search in the other run (a left element goes
// after the right elements that compare strictly before it, a right element after the left
// elements it does not compare strictly before), so the merge is stable and all elements move
// in parallel, one barrier per pass: n log^2 n comparator calls per row. The comparator is the
// HLO computation as a device function, called on the operands' values at two positions. Then
// every output is gathered through the permutation (elements copied bit for bit). The result
// is exactly the evaluator's std::stable_sort for any strict weak order (is_stable or not).
// Permutations live in shared memory for rows up to 4096 elements, else in a scratch buffer
// (two int arrays per row). Knob: block_size (1 is allowed: the host test runs it that way).
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/emitter_common.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/emitters_internal.h"

namespace kiln::codegen {

namespace {

constexpr int64_t kSharedRowLimit = 4096;

bool RowMajor(const Shape& s) {
  return SamePhysicalShape(WithLayout(s), Shape::ArrayWithDefaultLayout(s.element_type(), s.dimensions()));
}

}  // namespace

Status CheckSort(const HloInstruction& sort) {
  if (sort.opcode() != HloOpcode::kSort) return Unimplemented("sort emitter: %", sort.name(), " is no sort");
  const int64_t n = sort.operand_count();
  if (n < 1 || sort.to_apply() == nullptr) return InvalidArgument("sort %", sort.name(), ": malformed");
  const Shape& ks = sort.operand(0)->shape();
  if (!ks.IsArray() || ks.rank() < 1) return Unimplemented("sort %", sort.name(), ": keys of rank 0");
  const std::vector<int64_t>& dims = sort.attrs().dimensions;
  if (dims.size() != 1 || dims[0] != ks.rank() - 1)
    return Unimplemented("sort %", sort.name(), ": the sort emitter sorts along the minor dimension only");
  if (ks.dimensions(ks.rank() - 1) >= (int64_t{1} << 30))
    return Unimplemented("sort %", sort.name(), ": rows of 2^30 elements or more");
  for (int64_t i = 0; i < n; ++i) {
    const Shape& s = sort.operand(i)->shape();
    if (!s.IsArray() || s.dimensions() != ks.dimensions() || !RowMajor(s))
      return Unimplemented("sort %", sort.name(), ": operands must be row-major arrays of one shape");
  }
  const Shape& rs = sort.shape();
  for (int64_t i = 0; i < n; ++i) {
    const Shape& o = n == 1 ? rs : (rs.IsTuple() && rs.tuple_shapes_size() == n ? rs.tuple_shapes(i) : Shape());
    if (!o.IsArray() || o.element_type() != sort.operand(i)->shape().element_type() || !RowMajor(o))
      return Unimplemented("sort %", sort.name(), ": results must be row-major arrays like the operands");
  }
  const HloComputation& cmp = *sort.to_apply();
  if (cmp.num_parameters() != 2 * n) return InvalidArgument("sort %", sort.name(), ": comparator arity");
  for (int64_t i = 0; i < 2 * n; ++i) {
    const Shape& p = cmp.parameter_instruction(i)->shape();
    if (!p.IsArray() || p.rank() != 0 || p.element_type() != sort.operand(i / 2)->shape().element_type())
      return InvalidArgument("sort %", sort.name(), ": comparator parameter ", i, " does not match its operand");
  }
  const Shape& r = cmp.root_instruction()->shape();
  if (!r.IsArray() || r.rank() != 0 || r.element_type() != PrimitiveType::kPred)
    return InvalidArgument("sort %", sort.name(), ": the comparator must return pred[]");
  return OkStatus();
}

StatusOr<KernelSpec> EmitSort(const HloInstruction& sort, const DeviceSpec& device, const KernelConfig& config) {
  KILN_RETURN_IF_ERROR(CheckSort(sort));
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(sort));
  const int64_t n_ops = sort.operand_count();
  const Shape& ks = sort.operand(0)->shape();
  const int64_t len = ks.dimensions(ks.rank() - 1);
  const int64_t rows = len == 0 ? 0 : ks.num_elements() / len;
  KernelConfig c = config;
  if (c.block_size == 0) {
    // A long row is one block's work: give it the most threads.
    c.block_size = len >= 16384 ? std::min(1024, device.max_threads_per_block)
                                : static_cast<int>(std::clamp<int64_t>(FloorPow2(std::max<int64_t>(len, 1)), 32, 256));
  }
  if (c.block_size < 1 || c.block_size > device.max_threads_per_block || (c.block_size & (c.block_size - 1)) != 0)
    return InvalidArgument("sort emitter: bad block size ", c.block_size);
  c.vector_width = 1;
  c.unroll = 1;
  if (rows > INT32_MAX) return Unimplemented("sort %", sort.name(), ": too many rows");
  KernelAssembler ka(view, "sort", c);
  for (int64_t i = 0; i < n_ops; ++i) ka.MarkRead(i);
  KILN_ASSIGN_OR_RETURN(const ScalarFunction* f, ka.source().Function(*sort.to_apply()));
  const bool shared = len <= kSharedRowLimit;
  std::string scratch;
  if (!shared) scratch = ka.AddScratch(std::max<int64_t>(rows * 2 * len * 4, 16));
  const std::string L = std::to_string(len), B = std::to_string(c.block_size);
  std::string b;
  auto line = [&](const std::string& s) { b += "  " + s + "\n"; };
  if (rows == 0 || len == 0) {
    line("// Nothing to sort.");
  } else {
  line("const long long base = (long long)blockIdx.x * " + L + "LL;");
  if (shared) {
    line("__shared__ int kiln_perm[" + std::to_string(2 * std::max<int64_t>(len, 1)) + "];");
    line("int* src = kiln_perm;");
  } else {
    line("int* src = reinterpret_cast<int*>(" + scratch + ") + 2LL * base;");
  }
  line("int* dst = src + " + L + ";");
  // The comparator on the operands' values at row positions x and y.
  std::vector<std::string> args;
  for (int64_t i = 0; i < n_ops; ++i) {
    const PrimitiveType t = sort.operand(i)->shape().element_type();
    const std::string p = ka.operand_pointer(i);
    args.push_back(LoadConvert(t, p + "[base + x]"));
    args.push_back(LoadConvert(t, p + "[base + y]"));
  }
  line("auto less = [&](int x, int y) -> bool { return " + f->name + "(" + StrJoin(args, ", ") + "); };");
  line("// Both permutation buffers start as the identity: every slot always holds a position.");
  line("for (int i = threadIdx.x; i < " + L + "; i += " + B + ") { src[i] = i; dst[i] = i; }");
  line("__syncthreads();");
  line("for (int w = 1; w < " + L + "; w *= 2) {");
  line("  for (int i = threadIdx.x; i < " + L + "; i += " + B + ") {");
  line("    const int s = i / (2 * w) * (2 * w);");
  line("    const int mid = min(s + w, " + L + "), end = min(s + 2 * w, " + L + ");");
  line("    const int x = src[i];");
  line("    int pos;");
  line("    if (i < mid) {");
  line("      // After the right run's elements that come strictly before x.");
  line("      int lo = mid, hi = end;");
  line("      while (lo < hi) { const int m = (lo + hi) >> 1; if (less(src[m], x)) lo = m + 1; else hi = m; }");
  line("      pos = (i - s) + (lo - mid);");
  line("    } else {");
  line("      // After the left run's elements that x does not come strictly before (stability).");
  line("      int lo = s, hi = mid;");
  line("      while (lo < hi) { const int m = (lo + hi) >> 1; if (!less(x, src[m])) lo = m + 1; else hi = m; }");
  line("      pos = (i - mid) + (lo - s);");
  line("    }");
  line("    dst[s + pos] = x;");
  line("  }");
  line("  __syncthreads();");
  line("  int* t = src; src = dst; dst = t;");
  line("}");
  line("for (int i = threadIdx.x; i < " + L + "; i += " + B + ") {");
  line("  const long long j = base + src[i];");
  for (int64_t i = 0; i < n_ops; ++i)
    line("  " + ka.output_pointer(i) + "[base + i] = " + ka.operand_pointer(i) + "[j];");
  line("}");
  }
  const std::string entry = "sort_" + SanitizeIdentifier(sort.name());
  ka.AddEntry(entry, c.block_size, b);
  runtime::LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(std::max<int64_t>(rows, 1));
  dims.block.x = static_cast<uint32_t>(c.block_size);
  ka.AddLaunch(entry, dims);
  return ka.Finish();
}

}  // namespace kiln::codegen
