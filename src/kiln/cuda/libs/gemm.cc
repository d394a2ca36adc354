#include "kiln/cuda/libs/gemm.h"

#include <complex>
#include <cstring>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/libs/handles.h"

namespace kiln::cuda::libs {

StatusOr<cudaDataType> CudaDataType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF32: return CUDA_R_32F;
    case PrimitiveType::kF64: return CUDA_R_64F;
    case PrimitiveType::kF16: return CUDA_R_16F;
    case PrimitiveType::kBF16: return CUDA_R_16BF;
    case PrimitiveType::kF8E4M3FN: return CUDA_R_8F_E4M3;
    case PrimitiveType::kF8E5M2: return CUDA_R_8F_E5M2;
    case PrimitiveType::kS8: return CUDA_R_8I;
    case PrimitiveType::kU8: return CUDA_R_8U;
    case PrimitiveType::kS32: return CUDA_R_32I;
    case PrimitiveType::kC64: return CUDA_C_32F;
    case PrimitiveType::kC128: return CUDA_C_64F;
    default: return Unimplemented("no CUDA data type for ", PrimitiveTypeName(t));
  }
}

void EncodeScalar(PrimitiveType scale_type, double real, double imag, unsigned char* out) {
  std::memset(out, 0, 16);
  switch (scale_type) {
    case PrimitiveType::kF64: std::memcpy(out, &real, sizeof(double)); break;
    case PrimitiveType::kS32: {
      int32_t v = static_cast<int32_t>(real);
      std::memcpy(out, &v, sizeof(v));
      break;
    }
    case PrimitiveType::kC64: {
      std::complex<float> v(static_cast<float>(real), static_cast<float>(imag));
      std::memcpy(out, &v, sizeof(v));
      break;
    }
    case PrimitiveType::kC128: {
      std::complex<double> v(real, imag);
      std::memcpy(out, &v, sizeof(v));
      break;
    }
    default: {
      float v = static_cast<float>(real);
      std::memcpy(out, &v, sizeof(v));
    }
  }
}

namespace {

cublasComputeType_t ComputeType(GemmCompute c) {
  switch (c) {
    case GemmCompute::kF32: return CUBLAS_COMPUTE_32F;
    case GemmCompute::kF32Tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmCompute::kF64: return CUBLAS_COMPUTE_64F;
    case GemmCompute::kS32: return CUBLAS_COMPUTE_32I;
    case GemmCompute::kC32: return CUBLAS_COMPUTE_32F;
    case GemmCompute::kC32Tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  return CUBLAS_COMPUTE_32F;
}

cublasLtEpilogue_t Epilogue(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kNone: return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::kRelu: return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::kGelu: return CUBLASLT_EPILOGUE_GELU;
    case GemmEpilogue::kBiasRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::kBiasGelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool IsF8(PrimitiveType t) {
  return t == PrimitiveType::kF8E4M3FN || t == PrimitiveType::kF8E5M2;
}

std::string DescribeAlgo(const CublasLtApi& api, const cublasLtMatmulAlgo_t& algo, int index,
                         uint64_t workspace, float waves) {
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr, auto zero) {
    decltype(zero) v = zero;
    size_t written = 0;
    if (api.cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) !=
        CUBLAS_STATUS_SUCCESS) {
      return static_cast<int64_t>(-1);
    }
    return static_cast<int64_t>(v);
  };
  return StrCat("cublasLt#", index, " algo=", get(CUBLASLT_ALGO_CONFIG_ID, int32_t{0}),
                " tile=", get(CUBLASLT_ALGO_CONFIG_TILE_ID, uint32_t{0}),
                " stages=", get(CUBLASLT_ALGO_CONFIG_STAGES_ID, uint32_t{0}),
                " splitk=", get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, int32_t{0}),
                " swizzle=", get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, uint32_t{0}),
                " cluster=", get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, uint16_t{0}),
                " workspace=", workspace, " waves=", waves);
}

}  // namespace

Status CheckGemmBuffers(const GemmDesc& desc, const GemmTypes& types, const ColumnMajorGemm& cm,
                        const GemmBuffers& buffers) {
  const runtime::DeviceMemory& lhs = buffers.lhs;
  const runtime::DeviceMemory& rhs = buffers.rhs;
  const ColumnMajorMatrix& lhs_m = cm.swapped ? cm.b : cm.a;
  const ColumnMajorMatrix& rhs_m = cm.swapped ? cm.a : cm.b;
  KILN_RETURN_IF_ERROR(CheckBuffer(lhs, ColumnMajorBytes(lhs_m, cm.batch, desc.lhs.dtype),
                                   "gemm lhs"));
  KILN_RETURN_IF_ERROR(CheckBuffer(rhs, ColumnMajorBytes(rhs_m, cm.batch, desc.rhs.dtype),
                                   "gemm rhs"));
  KILN_RETURN_IF_ERROR(CheckBuffer(buffers.out, ColumnMajorBytes(cm.c, cm.batch, types.d),
                                   "gemm out"));
  if (!buffers.c.is_null() && (desc.beta != 0 || types.c != types.d)) {
    KILN_RETURN_IF_ERROR(CheckBuffer(buffers.c, ColumnMajorBytes(cm.c, cm.batch, types.c),
                                     "gemm c"));
  }
  if (GemmEpilogueHasBias(desc.epilogue)) {
    KILN_RETURN_IF_ERROR(CheckBuffer(buffers.bias,
                                     static_cast<uint64_t>(desc.n) * PrimitiveByteWidth(types.bias),
                                     "gemm bias"));
  }
  auto scale = [&](bool has, const runtime::DeviceMemory& m, const char* what) -> Status {
    if (!has) return OkStatus();
    return CheckBuffer(m, sizeof(float), what);
  };
  KILN_RETURN_IF_ERROR(scale(desc.has_a_scale, buffers.a_scale, "gemm a_scale"));
  KILN_RETURN_IF_ERROR(scale(desc.has_b_scale, buffers.b_scale, "gemm b_scale"));
  KILN_RETURN_IF_ERROR(scale(desc.has_d_scale, buffers.d_scale, "gemm d_scale"));
  KILN_RETURN_IF_ERROR(scale(desc.has_d_amax, buffers.d_amax, "gemm d_amax"));
  for (auto [m, what] : {std::pair{&buffers.lhs, "lhs"}, std::pair{&buffers.rhs, "rhs"},
                         std::pair{&buffers.out, "out"}, std::pair{&buffers.c, "c"},
                         std::pair{&buffers.bias, "bias"}}) {
    if (!m->is_null() && m->address() % desc.min_alignment_bytes != 0) {
      return InvalidArgument("gemm ", what, " at 0x", std::hex, m->address(), std::dec,
                             " is not aligned to ", desc.min_alignment_bytes,
                             " bytes (the plan's min_alignment_bytes)");
    }
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<GemmPlan>> GemmPlan::Create(const GemmDesc& desc, CudaDevice& device) {
  KILN_ASSIGN_OR_RETURN(GemmTypes types, ResolveGemmTypes(desc));
  KILN_ASSIGN_OR_RETURN(ColumnMajorGemm cm, MapToColumnMajor(desc));
  KILN_ASSIGN_OR_RETURN(LibraryHandles * handles, LibraryHandles::ForDevice(device));
  std::unique_ptr<GemmPlan> plan(new GemmPlan(desc, types, cm, *handles));
  KILN_RETURN_IF_ERROR(plan->Build().WithContext(desc.ToString()));
  return plan;
}

GemmPlan::~GemmPlan() {
  const CublasLtApi& api = handles_.lt_api();
  for (cublasLtMatrixLayout_t layout : {a_, b_, c_, d_}) {
    if (layout != nullptr) api.cublasLtMatrixLayoutDestroy(layout);
  }
  if (op_ != nullptr) api.cublasLtMatmulDescDestroy(op_);
}

Status GemmPlan::Build() {
  const CublasLtApi& api = handles_.lt_api();
  KILN_ASSIGN_OR_RETURN(cudaDataType scale_type, CudaDataType(types_.scale));
  KILN_RETURN_IF_ERROR(CublasLtStatus(
      api, api.cublasLtMatmulDescCreate(&op_, ComputeType(types_.compute), scale_type),
      "cublasLtMatmulDescCreate"));
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const auto& value, const char* what) {
    return CublasLtStatus(api, api.cublasLtMatmulDescSetAttribute(op_, attr, &value, sizeof(value)),
                          StrCat("cublasLtMatmulDescSetAttribute(", what, ")"));
  };
  const int32_t trans_a = cm_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t trans_b = cm_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  KILN_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_TRANSA, trans_a, "TRANSA"));
  KILN_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_TRANSB, trans_b, "TRANSB"));
  const uint32_t epilogue = Epilogue(desc_.epilogue);
  KILN_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "EPILOGUE"));
  if (GemmEpilogueHasBias(desc_.epilogue)) {
    KILN_ASSIGN_OR_RETURN(cudaDataType bias_type, CudaDataType(types_.bias));
    const int32_t bias_type_value = bias_type;
    KILN_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type_value,
                             "BIAS_DATA_TYPE"));
  }
  if (IsF8(desc_.lhs.dtype)) {
    // XLA's choice: fast (less often promoted) f8 accumulation unless HIGHEST is asked for.
    const int8_t fast = desc_.precision == Precision::kHighest ? 0 : 1;
    KILN_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "FAST_ACCUM"));
  }

  auto layout = [&](cublasLtMatrixLayout_t* out, PrimitiveType t,
                    const ColumnMajorMatrix& m) -> Status {
    KILN_ASSIGN_OR_RETURN(cudaDataType type, CudaDataType(t));
    KILN_RETURN_IF_ERROR(CublasLtStatus(
        api,
        api.cublasLtMatrixLayoutCreate(out, type, static_cast<uint64_t>(m.rows),
                                       static_cast<uint64_t>(m.cols), m.ld),
        StrCat("cublasLtMatrixLayoutCreate(", PrimitiveTypeName(t), "[", m.rows, "x", m.cols,
               "], ld=", m.ld, ")")));
    if (cm_.batch > 1) {
      const int32_t count = static_cast<int32_t>(cm_.batch);
      const int64_t stride = m.batch_stride;
      KILN_RETURN_IF_ERROR(CublasLtStatus(
          api,
          api.cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                               sizeof(count)),
          "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
      KILN_RETURN_IF_ERROR(CublasLtStatus(
          api,
          api.cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof(stride)),
          "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)"));
    }
    return OkStatus();
  };
  if (cm_.batch > INT32_MAX) return Unimplemented("gemm: batch ", cm_.batch, " exceeds 2^31-1");
  KILN_RETURN_IF_ERROR(layout(&a_, types_.a, cm_.a));
  KILN_RETURN_IF_ERROR(layout(&b_, types_.b, cm_.b));
  KILN_RETURN_IF_ERROR(layout(&c_, types_.c, cm_.c));
  KILN_RETURN_IF_ERROR(layout(&d_, types_.d, cm_.c));

  EncodeScalar(types_.scale, desc_.alpha, desc_.alpha_imag, alpha_.data());
  EncodeScalar(types_.scale, desc_.beta, 0, beta_.data());
  return OkStatus();
}

StatusOr<GemmAlgorithm> GemmPlan::DefaultAlgorithm() const {
  KILN_ASSIGN_OR_RETURN(std::vector<GemmAlgorithm> algorithms, ListAlgorithms(1));
  return algorithms.front();  // ListAlgorithms never returns an empty list
}

StatusOr<std::vector<GemmAlgorithm>> GemmPlan::ListAlgorithms(int max_algorithms) const {
  const CublasLtApi& api = handles_.lt_api();
  if (max_algorithms < 1) return InvalidArgument("ListAlgorithms: max_algorithms must be >= 1");
  KILN_RETURN_IF_ERROR(handles_.device().Activate());
  cublasLtMatmulPreference_t pref = nullptr;
  KILN_RETURN_IF_ERROR(CublasLtStatus(api, api.cublasLtMatmulPreferenceCreate(&pref),
                                      "cublasLtMatmulPreferenceCreate"));
  struct PrefGuard {
    const CublasLtApi& api;
    cublasLtMatmulPreference_t pref;
    ~PrefGuard() { api.cublasLtMatmulPreferenceDestroy(pref); }
  } guard{api, pref};
  const uint64_t max_workspace = desc_.max_workspace_bytes;
  KILN_RETURN_IF_ERROR(CublasLtStatus(
      api,
      api.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &max_workspace, sizeof(max_workspace)),
      "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)"));
  const uint32_t alignment = static_cast<uint32_t>(std::min<uint64_t>(desc_.min_alignment_bytes, 256));
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    KILN_RETURN_IF_ERROR(CublasLtStatus(
        api, api.cublasLtMatmulPreferenceSetAttribute(pref, attr, &alignment, sizeof(alignment)),
        "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)"));
  }
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(max_algorithms));
  int returned = 0;
  cublasStatus_t status = api.cublasLtMatmulAlgoGetHeuristic(
      handles_.lt_handle(), op_, a_, b_, c_, d_, pref, max_algorithms, results.data(), &returned);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && returned == 0)) {
    return Unimplemented("cuBLASLt has no algorithm for ", desc_.ToString());
  }
  KILN_RETURN_IF_ERROR(CublasLtStatus(api, status, "cublasLtMatmulAlgoGetHeuristic"));
  std::vector<GemmAlgorithm> algorithms;
  for (int i = 0; i < returned; ++i) {
    const cublasLtMatmulHeuristicResult_t& r = results[static_cast<size_t>(i)];
    if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > max_workspace) continue;
    GemmAlgorithm algorithm;
    algorithm.backend = GemmAlgorithm::Backend::kCublasLt;
    algorithm.index = static_cast<int>(algorithms.size());
    static_assert(sizeof(r.algo) == sizeof(algorithm.opaque));
    std::memcpy(algorithm.opaque.data(), &r.algo, sizeof(r.algo));
    algorithm.workspace_bytes = r.workspaceSize;
    algorithm.waves = r.wavesCount;
    algorithm.description =
        DescribeAlgo(api, r.algo, algorithm.index, r.workspaceSize, r.wavesCount);
    algorithms.push_back(std::move(algorithm));
  }
  if (algorithms.empty()) {
    return Unimplemented("cuBLASLt has no usable algorithm for ", desc_.ToString());
  }
  return algorithms;
}

Status GemmPlan::Run(const GemmAlgorithm& algorithm, const GemmBuffers& buffers,
                     runtime::DeviceMemory workspace, runtime::Stream& stream) const {
  if (algorithm.backend != GemmAlgorithm::Backend::kCublasLt) {
    return InvalidArgument("GemmPlan::Run: ", algorithm.description,
                           " is not a cuBLASLt algorithm");
  }
  KILN_RETURN_IF_ERROR(CheckGemmBuffers(desc_, types_, cm_, buffers));
  KILN_RETURN_IF_ERROR(CheckBuffer(workspace, algorithm.workspace_bytes, "gemm workspace"));
  KILN_ASSIGN_OR_RETURN(CUstream cu_stream, CudaStreamHandle(stream, handles_.device()));
  const CublasLtApi& api = handles_.lt_api();
  KILN_RETURN_IF_ERROR(handles_.device().Activate());

  // C is out itself unless given. With an f8 out, C (bf16) must not alias D and beta is 0 (so C
  // is never read): without a separate c it is passed as null.
  void* c = buffers.c.is_null() ? buffers.out.ptr : buffers.c.ptr;
  if (types_.c != types_.d && buffers.c.is_null()) c = nullptr;
  cublasLtMatmulAlgo_t algo;
  std::memcpy(&algo, algorithm.opaque.data(), sizeof(algo));

  std::lock_guard<std::mutex> lock(run_mu_);
  auto set_pointer = [&](cublasLtMatmulDescAttributes_t attr, const runtime::DeviceMemory& m,
                         const char* what) {
    void* p = m.ptr;
    return CublasLtStatus(api, api.cublasLtMatmulDescSetAttribute(op_, attr, &p, sizeof(p)),
                          StrCat("cublasLtMatmulDescSetAttribute(", what, ")"));
  };
  if (GemmEpilogueHasBias(desc_.epilogue)) {
    KILN_RETURN_IF_ERROR(set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, buffers.bias, "BIAS"));
  }
  // The library's A is rhs and B is lhs when swapped (gemm_desc.cc): so are their scales.
  const runtime::DeviceMemory& a_scale = cm_.swapped ? buffers.b_scale : buffers.a_scale;
  const runtime::DeviceMemory& b_scale = cm_.swapped ? buffers.a_scale : buffers.b_scale;
  const bool has_a = cm_.swapped ? desc_.has_b_scale : desc_.has_a_scale;
  const bool has_b = cm_.swapped ? desc_.has_a_scale : desc_.has_b_scale;
  if (has_a) KILN_RETURN_IF_ERROR(set_pointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale, "A_SCALE"));
  if (has_b) KILN_RETURN_IF_ERROR(set_pointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale, "B_SCALE"));
  if (desc_.has_d_scale) {
    KILN_RETURN_IF_ERROR(set_pointer(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, buffers.d_scale, "D_SCALE"));
  }
  if (desc_.has_d_amax) {
    KILN_RETURN_IF_ERROR(set_pointer(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, buffers.d_amax, "AMAX_D"));
  }
  const runtime::DeviceMemory& a = cm_.swapped ? buffers.rhs : buffers.lhs;
  const runtime::DeviceMemory& b = cm_.swapped ? buffers.lhs : buffers.rhs;
  return CublasLtStatus(
      api,
      api.cublasLtMatmul(handles_.lt_handle(), op_, alpha_.data(), a.ptr, a_, b.ptr, b_,
                         beta_.data(), c, c_, buffers.out.ptr, d_, &algo, workspace.ptr,
                         algorithm.workspace_bytes, cu_stream),
      StrCat("cublasLtMatmul(", algorithm.description, ")"));
}

}  // namespace kiln::cuda::libs
