#include "kiln/cuda/libs/sort.h"

#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/handles.h"
#include "kiln/cuda/libs/kernel_loader.h"

namespace kiln::cuda::libs {

const char* SortKeyKernelSource();     // sort_kernels.cc
const char* SortCommonKernelSource();  // sort_kernels.cc

namespace {

struct KeyConfig {
  const char* in_type;  // storage type of the input keys
  int bits;             // 8, 16, 32, 64
  int key_class;        // 0 unsigned, 1 signed, 2 float
  const char* inf = "0";
  const char* nan = "0";
};

StatusOr<KeyConfig> KeyConfigFor(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred:
    case PrimitiveType::kU8: return KeyConfig{"unsigned char", 8, 0};
    case PrimitiveType::kS8: return KeyConfig{"unsigned char", 8, 1};
    case PrimitiveType::kU16: return KeyConfig{"unsigned short", 16, 0};
    case PrimitiveType::kS16: return KeyConfig{"unsigned short", 16, 1};
    case PrimitiveType::kF16: return KeyConfig{"unsigned short", 16, 2, "0x7C00u", "0x7E00u"};
    case PrimitiveType::kBF16: return KeyConfig{"unsigned short", 16, 2, "0x7F80u", "0x7FC0u"};
    case PrimitiveType::kU32: return KeyConfig{"unsigned int", 32, 0};
    case PrimitiveType::kS32: return KeyConfig{"unsigned int", 32, 1};
    case PrimitiveType::kF32:
      return KeyConfig{"unsigned int", 32, 2, "0x7F800000u", "0x7FC00000u"};
    case PrimitiveType::kU64: return KeyConfig{"unsigned long long", 64, 0};
    case PrimitiveType::kS64: return KeyConfig{"unsigned long long", 64, 1};
    case PrimitiveType::kF64:
      return KeyConfig{"unsigned long long", 64, 2, "0x7FF0000000000000ull",
                       "0x7FF8000000000000ull"};
    default:
      return Unimplemented("sort: keys of type ", PrimitiveTypeName(t),
                           " (supported: pred, s8-s64, u8-u64, f16, bf16, f32, f64)");
  }
}

int RadixBytes(const KeyConfig& k) { return k.bits > 32 ? 8 : 4; }

uint64_t Align(uint64_t v) { return (v + 255) / 256 * 256; }

const char* GatherKernelName(int width) {
  switch (width) {
    case 1: return "kiln_sort_gather_w1";
    case 2: return "kiln_sort_gather_w2";
    case 4: return "kiln_sort_gather_w4";
    case 8: return "kiln_sort_gather_w8";
    case 16: return "kiln_sort_gather_w16";
  }
  return nullptr;
}

constexpr int64_t kRadixTile = 2048;  // KILN_RADIX_TILE in sort_kernels.cc
constexpr uint32_t kRadixThreads = 256;

// Blocks for a grid-stride loop over `work` items of `per_block` each.
uint32_t GridFor(const CudaDevice& device, uint64_t work, uint64_t per_block) {
  const uint64_t wanted = (work + per_block - 1) / per_block;
  const uint64_t cap = std::max<uint64_t>(1, device.description().multiprocessor_count) * 32;
  return static_cast<uint32_t>(std::clamp<uint64_t>(wanted, 1, cap));
}

}  // namespace

std::string SortDesc::ToString() const {
  std::string s = StrCat("sort ", PrimitiveTypeName(key_type), "[", rows, ",", row_length, "] ",
                         order == SortOrder::kAscending ? "ascending" : "descending");
  if (canonicalize_floats) s += " canonical";
  for (PrimitiveType v : value_types) s += StrCat(" +", PrimitiveTypeName(v));
  if (index_type != PrimitiveType::kInvalid) s += StrCat(" indices=", PrimitiveTypeName(index_type));
  if (k > 0) s += StrCat(" k=", k);
  return s;
}

Status ValidateSortDesc(const SortDesc& d) {
  KILN_RETURN_IF_ERROR(KeyConfigFor(d.key_type).status());
  if (d.rows < 0 || d.row_length < 0) {
    return InvalidArgument("sort: negative sizes (", d.ToString(), ")");
  }
  if (d.row_length > INT32_MAX || d.rows > INT32_MAX) {
    return Unimplemented("sort: rows or row length above 2^31-1 (", d.ToString(), ")");
  }
  if (d.k < 0 || d.k > d.row_length) {
    return InvalidArgument("sort: k=", d.k, " outside [0, ", d.row_length, "]");
  }
  for (PrimitiveType v : d.value_types) {
    if (!IsArrayType(v) || IsSubByteType(v) || GatherKernelName(PrimitiveByteWidth(v)) == nullptr) {
      return Unimplemented("sort: values of type ", PrimitiveTypeName(v));
    }
  }
  if (d.index_type != PrimitiveType::kInvalid && d.index_type != PrimitiveType::kS32 &&
      d.index_type != PrimitiveType::kU32 && d.index_type != PrimitiveType::kS64) {
    return Unimplemented("sort: indices of type ", PrimitiveTypeName(d.index_type),
                         " (s32, u32 or s64)");
  }
  return OkStatus();
}

NvrtcRequest SortKeyKernelsRequest(const SortDesc& desc) {
  NvrtcRequest request;
  request.source = SortKeyKernelSource();
  request.program_name = "kiln_sort_keys.cu";
  StatusOr<KeyConfig> k = KeyConfigFor(desc.key_type);
  const KeyConfig key = k.ok() ? *k : KeyConfig{"unsigned int", 32, 0};
  request.options = {
      StrCat("-DKILN_KEY_IN_T=", key.in_type),
      StrCat("-DKILN_RADIX_T=", key.bits > 32 ? "unsigned long long" : "unsigned int"),
      StrCat("-DKILN_KEY_BITS=", key.bits),
      StrCat("-DKILN_KEY_CLASS=", key.key_class),
      StrCat("-DKILN_FLOAT_INF=", key.inf),
      StrCat("-DKILN_FLOAT_NAN=", key.nan),
      StrCat("-DKILN_CANONICAL=", desc.canonicalize_floats ? 1 : 0),
      StrCat("-DKILN_DESCENDING=", desc.order == SortOrder::kDescending ? 1 : 0),
  };
  return request;
}

NvrtcRequest SortCommonKernelsRequest() {
  NvrtcRequest request;
  request.source = SortCommonKernelSource();
  request.program_name = "kiln_sort_common.cu";
  return request;
}

StatusOr<std::unique_ptr<SortPlan>> SortPlan::Create(const SortDesc& desc, CudaDevice& device) {
  KILN_RETURN_IF_ERROR(ValidateSortDesc(desc));
  std::unique_ptr<SortPlan> plan(new SortPlan(desc, device));
  KILN_RETURN_IF_ERROR(plan->Build().WithContext(desc.ToString()));
  return plan;
}

Status SortPlan::Build() {
  KILN_ASSIGN_OR_RETURN(KeyConfig key, KeyConfigFor(desc_.key_type));
  const int64_t rows = desc_.rows, n = desc_.row_length, out_len = desc_.output_length();
  const uint64_t radix_bytes = RadixBytes(key);
  radix_ = n > kSortMaxSmallRow;
  if (!radix_) {
    int p = 2;
    while (p < n) p <<= 1;
    small_size_ = p;
    workspace_bytes_ = Align(static_cast<uint64_t>(rows) * out_len * 4);
  } else {
    const uint64_t elements = static_cast<uint64_t>(rows) * n;
    const uint64_t tiles = (n + kRadixTile - 1) / kRadixTile;
    workspace_bytes_ = 2 * Align(elements * radix_bytes) + 2 * Align(elements * 4) +
                       Align(static_cast<uint64_t>(rows) * 256 * tiles * 4);
  }

  KILN_ASSIGN_OR_RETURN(runtime::Module * keys, LoadLibraryModule(device_, SortKeyKernelsRequest(desc_)));
  KILN_ASSIGN_OR_RETURN(runtime::Module * common, LoadLibraryModule(device_, SortCommonKernelsRequest()));
  if (!radix_) {
    KILN_ASSIGN_OR_RETURN(small_, keys->GetKernel("kiln_sort_small"));
  } else {
    KILN_ASSIGN_OR_RETURN(init_, keys->GetKernel("kiln_radix_init"));
    KILN_ASSIGN_OR_RETURN(hist_, keys->GetKernel("kiln_radix_hist"));
    KILN_ASSIGN_OR_RETURN(scatter_, keys->GetKernel("kiln_radix_scatter"));
    KILN_ASSIGN_OR_RETURN(scan_, common->GetKernel("kiln_radix_scan"));
  }
  std::vector<PrimitiveType> gathered = {desc_.key_type};
  gathered.insert(gathered.end(), desc_.value_types.begin(), desc_.value_types.end());
  for (PrimitiveType t : gathered) {
    KILN_ASSIGN_OR_RETURN(runtime::Kernel * g,
                          common->GetKernel(GatherKernelName(PrimitiveByteWidth(t))));
    gathers_.push_back(g);
  }
  if (desc_.index_type != PrimitiveType::kInvalid) {
    KILN_ASSIGN_OR_RETURN(indices_, common->GetKernel(PrimitiveByteWidth(desc_.index_type) == 8
                                                          ? "kiln_sort_indices_64"
                                                          : "kiln_sort_indices_32"));
  }
  return OkStatus();
}

Status SortPlan::Run(const SortBuffers& buffers, runtime::DeviceMemory workspace,
                     runtime::Stream& stream) const {
  const int64_t rows = desc_.rows, n = desc_.row_length, out_len = desc_.output_length();
  const uint64_t in_count = static_cast<uint64_t>(rows) * n;
  const uint64_t out_count = static_cast<uint64_t>(rows) * out_len;
  const int key_width = PrimitiveByteWidth(desc_.key_type);
  KILN_RETURN_IF_ERROR(CheckBuffer(buffers.keys_in, in_count * key_width, "sort keys_in"));
  KILN_RETURN_IF_ERROR(CheckBuffer(buffers.keys_out, out_count * key_width, "sort keys_out"));
  if (buffers.values_in.size() != desc_.value_types.size() ||
      buffers.values_out.size() != desc_.value_types.size()) {
    return InvalidArgument("sort: ", desc_.value_types.size(), " value arrays expected, got ",
                           buffers.values_in.size(), " in and ", buffers.values_out.size(), " out");
  }
  for (size_t i = 0; i < desc_.value_types.size(); ++i) {
    const int w = PrimitiveByteWidth(desc_.value_types[i]);
    KILN_RETURN_IF_ERROR(CheckBuffer(buffers.values_in[i], in_count * w, "sort values_in"));
    KILN_RETURN_IF_ERROR(CheckBuffer(buffers.values_out[i], out_count * w, "sort values_out"));
  }
  if (indices_ != nullptr) {
    KILN_RETURN_IF_ERROR(CheckBuffer(buffers.indices_out,
                                     out_count * PrimitiveByteWidth(desc_.index_type),
                                     "sort indices_out"));
  }
  KILN_RETURN_IF_ERROR(CheckBuffer(workspace, workspace_bytes_, "sort workspace"));
  if (rows == 0 || n == 0) return OkStatus();

  runtime::DeviceMemory perm;
  int64_t perm_stride = 0;
  if (!radix_) {
    perm = workspace.Slice(0, out_count * 4);
    perm_stride = out_len;
    KILN_ASSIGN_OR_RETURN(KeyConfig key, KeyConfigFor(desc_.key_type));
    runtime::LaunchDims dims;
    dims.block.x = static_cast<uint32_t>(std::clamp(small_size_ / 2, 32, 1024));
    dims.grid.x = static_cast<uint32_t>(std::min<int64_t>(rows, int64_t{1} << 20));
    dims.shared_memory_bytes = static_cast<uint32_t>(small_size_ * (RadixBytes(key) + 4));
    runtime::KernelArgs args;
    args.Add(buffers.keys_in).Add(perm).Add(static_cast<long long>(rows));
    args.Add(static_cast<int>(n)).Add(small_size_).Add(static_cast<int>(out_len));
    KILN_RETURN_IF_ERROR(stream.Launch(*small_, dims, args));
  } else {
    KILN_ASSIGN_OR_RETURN(KeyConfig key, KeyConfigFor(desc_.key_type));
    const uint64_t radix_bytes = RadixBytes(key);
    const int64_t tiles = (n + kRadixTile - 1) / kRadixTile;
    uint64_t offset = 0;
    auto take = [&](uint64_t bytes) {
      runtime::DeviceMemory m = workspace.Slice(offset, bytes);
      offset += Align(bytes);
      return m;
    };
    runtime::DeviceMemory rk[2] = {take(in_count * radix_bytes), take(in_count * radix_bytes)};
    runtime::DeviceMemory ri[2] = {take(in_count * 4), take(in_count * 4)};
    runtime::DeviceMemory hist = take(static_cast<uint64_t>(rows) * 256 * tiles * 4);

    runtime::LaunchDims linear;
    linear.block.x = 256;
    linear.grid.x = GridFor(device_, in_count, 256 * 4);
    runtime::KernelArgs init;
    init.Add(buffers.keys_in).Add(rk[0]).Add(ri[0]).Add(static_cast<long long>(in_count));
    init.Add(static_cast<long long>(n));
    KILN_RETURN_IF_ERROR(stream.Launch(*init_, linear, init));

    runtime::LaunchDims per_tile;
    per_tile.block.x = kRadixThreads;
    per_tile.grid.x = GridFor(device_, static_cast<uint64_t>(rows) * tiles, 1);
    runtime::LaunchDims per_row;
    per_row.block.x = 1024;
    per_row.grid.x = GridFor(device_, static_cast<uint64_t>(rows), 1);
    int cur = 0;
    for (int shift = 0; shift < key.bits; shift += 8) {
      runtime::KernelArgs h;
      h.Add(rk[cur]).Add(hist).Add(static_cast<long long>(rows)).Add(static_cast<long long>(n));
      h.Add(static_cast<long long>(tiles)).Add(shift);
      KILN_RETURN_IF_ERROR(stream.Launch(*hist_, per_tile, h));
      runtime::KernelArgs s;
      s.Add(hist).Add(static_cast<long long>(rows)).Add(static_cast<long long>(256 * tiles));
      KILN_RETURN_IF_ERROR(stream.Launch(*scan_, per_row, s));
      runtime::KernelArgs sc;
      sc.Add(rk[cur]).Add(ri[cur]).Add(rk[1 - cur]).Add(ri[1 - cur]).Add(hist);
      sc.Add(static_cast<long long>(rows)).Add(static_cast<long long>(n));
      sc.Add(static_cast<long long>(tiles)).Add(shift);
      KILN_RETURN_IF_ERROR(stream.Launch(*scatter_, per_tile, sc));
      cur = 1 - cur;
    }
    perm = ri[cur];
    perm_stride = n;
  }

  runtime::LaunchDims gather;
  gather.block.x = 256;
  gather.grid.x = GridFor(device_, out_count, 256 * 4);
  std::vector<std::pair<runtime::DeviceMemory, runtime::DeviceMemory>> arrays = {
      {buffers.keys_in, buffers.keys_out}};
  for (size_t i = 0; i < desc_.value_types.size(); ++i) {
    arrays.emplace_back(buffers.values_in[i], buffers.values_out[i]);
  }
  for (size_t i = 0; i < arrays.size(); ++i) {
    runtime::KernelArgs g;
    g.Add(arrays[i].first).Add(arrays[i].second).Add(perm).Add(static_cast<long long>(rows));
    g.Add(static_cast<long long>(n)).Add(static_cast<long long>(out_len));
    g.Add(static_cast<long long>(perm_stride));
    KILN_RETURN_IF_ERROR(stream.Launch(*gathers_[i], gather, g));
  }
  if (indices_ != nullptr) {
    runtime::KernelArgs a;
    a.Add(perm).Add(buffers.indices_out).Add(static_cast<long long>(rows));
    a.Add(static_cast<long long>(out_len)).Add(static_cast<long long>(perm_stride));
    KILN_RETURN_IF_ERROR(stream.Launch(*indices_, gather, a));
  }
  return OkStatus();
}

}  // namespace kiln::cuda::libs
