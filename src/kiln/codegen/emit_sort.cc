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
// Rows of up to 4096 elements are sorted in shared memory by one block each (one launch).
// Longer rows: blocks sort chunks of 4096 positions in shared memory into a scratch buffer (two
// int arrays per row), then one launch per merge pass of width 4096, 8192, ... where every
// element of every row finds its place by its own thread, then a launch gathers the outputs.
// Knob: block_size (1 is allowed: the host test runs it that way).
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
  if (c.block_size == 0)
    c.block_size = static_cast<int>(std::clamp<int64_t>(FloorPow2(std::max<int64_t>(len, 1)), 32, 256));
  if (c.block_size < 1 || c.block_size > device.max_threads_per_block || (c.block_size & (c.block_size - 1)) != 0)
    return InvalidArgument("sort emitter: bad block size ", c.block_size);
  c.vector_width = 1;
  c.unroll = 1;
  if (rows > INT32_MAX) return Unimplemented("sort %", sort.name(), ": too many rows");
  KernelAssembler ka(view, "sort", c, device.dialect);
  for (int64_t i = 0; i < n_ops; ++i) ka.MarkRead(i);
  KILN_ASSIGN_OR_RETURN(const ScalarFunction* f, ka.source().Function(*sort.to_apply()));
  const std::string B = std::to_string(c.block_size), L = std::to_string(len);
  // The comparator on the operands' values at row positions x and y of the row at `base`.
  std::vector<std::string> args;
  for (int64_t i = 0; i < n_ops; ++i) {
    const PrimitiveType t = sort.operand(i)->shape().element_type();
    const std::string p = ka.operand_pointer(i);
    args.push_back(LoadConvert(t, p + "[base + x]"));
    args.push_back(LoadConvert(t, p + "[base + y]"));
  }
  const std::string less =
      "auto less = [&](int x, int y) -> bool { return " + f->name + "(" + StrJoin(args, ", ") + "); };";
  // One merge step: element i of `src` (runs of width w sorted, n elements) placed into `dst`.
  auto merge_step = [](const std::string& n, const std::string& in) {
    std::string m;
    auto l = [&](const std::string& s) { m += in + s + "\n"; };
    l("const int s = i / (2 * w) * (2 * w);");
    l("const int mid = min(s + w, " + n + "), end = min(s + 2 * w, " + n + ");");
    l("const int x = src[i];");
    l("int pos;");
    l("if (i < mid) {");
    l("  // After the right run's elements that come strictly before x.");
    l("  int lo = mid, hi = end;");
    l("  while (lo < hi) { const int m = (lo + hi) >> 1; if (less(src[m], x)) lo = m + 1; else hi = m; }");
    l("  pos = (i - s) + (lo - mid);");
    l("} else {");
    l("  // After the left run's elements that x does not come strictly before (stability).");
    l("  int lo = s, hi = mid;");
    l("  while (lo < hi) { const int m = (lo + hi) >> 1; if (!less(x, src[m])) lo = m + 1; else hi = m; }");
    l("  pos = (i - mid) + (lo - s);");
    l("}");
    l("dst[s + pos] = x;");
    return m;
  };
  // The in-block sort of `n` positions starting at row position `first` (shared memory); leaves
  // the sorted positions in `src`.
  auto block_sort = [&](const std::string& n, const std::string& first, int64_t capacity) {
    std::string m;
    m += "  __shared__ int kiln_perm[" + std::to_string(2 * std::max<int64_t>(capacity, 1)) + "];\n";
    m += "  int* src = kiln_perm;\n";
    m += "  int* dst = kiln_perm + " + std::to_string(std::max<int64_t>(capacity, 1)) + ";\n";
    m += "  // Both buffers start as the identity: every slot always holds a position.\n";
    m += "  for (int i = threadIdx.x; i < " + n + "; i += " + B + ") { src[i] = " + first + " + i; dst[i] = " +
         first + " + i; }\n";
    m += "  __syncthreads();\n";
    m += "  for (int w = 1; w < " + n + "; w *= 2) {\n";
    m += "    for (int i = threadIdx.x; i < " + n + "; i += " + B + ") {\n";
    // Positions are row positions, slots are chunk-relative: shift the comparison's operands.
    m += merge_step(n, "      ");
    m += "    }\n";
    m += "    __syncthreads();\n";
    m += "    int* t = src; src = dst; dst = t;\n";
    m += "  }\n";
    return m;
  };
  const std::string name = SanitizeIdentifier(sort.name());
  if (rows == 0 || len == 0) {
    const std::string entry = "sort_" + name;
    ka.AddEntry(entry, c.block_size, "  // Nothing to sort.\n");
    runtime::LaunchDims dims;
    dims.block.x = static_cast<uint32_t>(c.block_size);
    ka.AddLaunch(entry, dims);
  } else if (len <= kSharedRowLimit) {
    // One block per row.
    std::string b = "  const long long base = (long long)blockIdx.x * " + L + "LL;\n  " + less + "\n";
    b += block_sort(L, "0", len);
    b += "  for (int i = threadIdx.x; i < " + L + "; i += " + B + ") {\n";
    b += "    const long long j = base + src[i];\n";
    for (int64_t i = 0; i < n_ops; ++i)
      b += "    " + ka.output_pointer(i) + "[base + i] = " + ka.operand_pointer(i) + "[j];\n";
    b += "  }\n";
    const std::string entry = "sort_" + name;
    ka.AddEntry(entry, c.block_size, b);
    runtime::LaunchDims dims;
    dims.grid.x = static_cast<uint32_t>(rows);
    dims.block.x = static_cast<uint32_t>(c.block_size);
    ka.AddLaunch(entry, dims);
  } else {
    // Long rows: blocks sort chunks of kSharedRowLimit positions into the scratch buffer, then
    // one launch per merge pass (every element of every row placed by its own thread), then the
    // gather.
    const int64_t chunk = kSharedRowLimit, chunks = CeilDiv(len, chunk), total = rows * len;
    if (rows * chunks > INT32_MAX || CeilDiv(total, c.block_size) > INT32_MAX)
      return Unimplemented("sort %", sort.name(), ": too large");
    const std::string scratch = ka.AddScratch(2 * total * 4);
    const std::string C = std::to_string(chunk), NC = std::to_string(chunks), T = std::to_string(total);
    std::string b = "  const long long row = blockIdx.x / " + NC + ";\n";
    b += "  const int first = (int)(blockIdx.x % " + NC + ") * " + C + ";\n";
    b += "  const int n = min(" + C + ", " + L + " - first);\n";
    b += "  const long long base = row * " + L + "LL;\n  " + less + "\n";
    // The in-block sort compares positions relative to the chunk's slots but holding row
    // positions: src/dst hold row positions, indices i/s/mid are chunk-relative.
    b += block_sort("n", "first", chunk);
    b += "  int* out = reinterpret_cast<int*>(" + scratch + ") + base + first;\n";
    // The other half starts as the identity: every slot always holds a row position.
    b += "  for (int i = threadIdx.x; i < n; i += " + B + ") { out[i] = src[i]; out[" + T + "LL + i] = first + i; }\n";
    const std::string e0 = "sort_chunks_" + name;
    ka.AddEntry(e0, c.block_size, b);
    runtime::LaunchDims d0;
    d0.grid.x = static_cast<uint32_t>(rows * chunks);
    d0.block.x = static_cast<uint32_t>(c.block_size);
    ka.AddLaunch(e0, d0);
    runtime::LaunchDims dn;
    dn.grid.x = static_cast<uint32_t>(CeilDiv(total, c.block_size));
    dn.block.x = static_cast<uint32_t>(c.block_size);
    const std::string thread = "  const long long g = (long long)blockIdx.x * " + B + " + threadIdx.x;\n  if (g >= " + T +
                               "LL) return;\n  const long long row = g / " + L + ", base = row * " + L +
                               "LL;\n  const int i = (int)(g - base);\n";
    int parity = 0;  // which half of the scratch buffer holds the current runs
    int pass = 0;
    for (int64_t w = chunk; w < len; w *= 2, ++pass) {
      std::string m = thread;
      m += "  const int w = " + std::to_string(w) + ";\n";
      m += "  const int* src = reinterpret_cast<const int*>(" + scratch + ") + " + (parity ? T + "LL + " : "") + "base;\n";
      m += "  int* dst = reinterpret_cast<int*>(" + scratch + ") + " + (parity ? "" : T + "LL + ") + "base;\n";
      m += "  " + less + "\n";
      m += merge_step(L, "  ");
      const std::string e = "sort_merge" + std::to_string(pass) + "_" + name;
      ka.AddEntry(e, c.block_size, m);
      ka.AddLaunch(e, dn);
      parity ^= 1;
    }
    std::string g = thread;
    g += "  const int* perm = reinterpret_cast<const int*>(" + scratch + ") + " + (parity ? T + "LL + " : "") + "base;\n";
    g += "  const long long j = base + perm[i];\n";
    for (int64_t i = 0; i < n_ops; ++i) g += "  " + ka.output_pointer(i) + "[g] = " + ka.operand_pointer(i) + "[j];\n";
    const std::string eg = "sort_gather_" + name;
    ka.AddEntry(eg, c.block_size, g);
    ka.AddLaunch(eg, dn);
  }
  return ka.Finish();
}

}  // namespace kiln::codegen
