#include "kiln/cuda/libs/cublas_gemm.h"

#include <climits>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/handles.h"

namespace kiln::cuda::libs {

namespace {

cublasComputeType_t CublasComputeType(GemmCompute c) {
  switch (c) {
    case GemmCompute::kF32:
    case GemmCompute::kC32: return CUBLAS_COMPUTE_32F;
    case GemmCompute::kF32Tf32:
    case GemmCompute::kC32Tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmCompute::kF64: return CUBLAS_COMPUTE_64F;
    case GemmCompute::kS32: return CUBLAS_COMPUTE_32I;
  }
  return CUBLAS_COMPUTE_32F;
}

bool FitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

std::vector<int> AlgorithmIds() {
  std::vector<int> ids = {CUBLAS_GEMM_DEFAULT};
  for (int i = CUBLAS_GEMM_ALGO0; i <= CUBLAS_GEMM_ALGO23; ++i) ids.push_back(i);
  ids.push_back(CUBLAS_GEMM_DEFAULT_TENSOR_OP);
  for (int i = CUBLAS_GEMM_ALGO0_TENSOR_OP; i <= CUBLAS_GEMM_ALGO15_TENSOR_OP; ++i) {
    ids.push_back(i);
  }
  return ids;
}

}  // namespace

Status CublasSupports(const GemmDesc& desc) {
  KILN_ASSIGN_OR_RETURN(ColumnMajorGemm cm, MapToColumnMajor(desc));
  if (desc.epilogue != GemmEpilogue::kNone) {
    return Unimplemented("cuBLAS: no epilogue ", GemmEpilogueName(desc.epilogue),
                         " (use cuBLASLt)");
  }
  if (desc.lhs.dtype == PrimitiveType::kF8E4M3FN || desc.lhs.dtype == PrimitiveType::kF8E5M2) {
    return Unimplemented("cuBLAS: no f8 GEMMs (use cuBLASLt)");
  }
  for (int64_t v : {cm.m, cm.n, cm.k, cm.batch, cm.a.ld, cm.b.ld, cm.c.ld}) {
    if (!FitsInt(v)) return Unimplemented("cuBLAS: a size or leading dimension exceeds 2^31-1");
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<CublasGemmPlan>> CublasGemmPlan::Create(const GemmDesc& desc,
                                                                 CudaDevice& device) {
  KILN_ASSIGN_OR_RETURN(GemmTypes types, ResolveGemmTypes(desc));
  KILN_RETURN_IF_ERROR(CublasSupports(desc));
  KILN_ASSIGN_OR_RETURN(ColumnMajorGemm cm, MapToColumnMajor(desc));
  KILN_ASSIGN_OR_RETURN(LibraryHandles * handles, LibraryHandles::ForDevice(device));
  KILN_RETURN_IF_ERROR(handles->cublas_api().status());
  std::unique_ptr<CublasGemmPlan> plan(new CublasGemmPlan(desc, types, cm, *handles));
  EncodeScalar(types.scale, desc.alpha, desc.alpha_imag, plan->alpha_.data());
  EncodeScalar(types.scale, desc.beta, 0, plan->beta_.data());
  return plan;
}

StatusOr<GemmAlgorithm> CublasGemmPlan::DefaultAlgorithm() const {
  KILN_ASSIGN_OR_RETURN(std::vector<GemmAlgorithm> algorithms, ListAlgorithms(1));
  return algorithms.front();  // ListAlgorithms never returns an empty list
}

StatusOr<std::vector<GemmAlgorithm>> CublasGemmPlan::ListAlgorithms(int max_algorithms) const {
  std::vector<GemmAlgorithm> algorithms;
  for (int id : AlgorithmIds()) {
    if (static_cast<int>(algorithms.size()) >= max_algorithms) break;
    GemmAlgorithm a;
    a.backend = GemmAlgorithm::Backend::kCublas;
    a.index = static_cast<int>(algorithms.size());
    a.cublas_algo = id;
    a.workspace_bytes = desc_.max_workspace_bytes;
    a.description = StrCat("cublas#", a.index, " algo=", id);
    algorithms.push_back(std::move(a));
  }
  return algorithms;
}

Status CublasGemmPlan::Run(const GemmAlgorithm& algorithm, const GemmBuffers& buffers,
                           runtime::DeviceMemory workspace, runtime::Stream& stream) const {
  if (algorithm.backend != GemmAlgorithm::Backend::kCublas) {
    return InvalidArgument("CublasGemmPlan::Run: ", algorithm.description,
                           " is not a cuBLAS algorithm");
  }
  KILN_RETURN_IF_ERROR(CheckGemmBuffers(desc_, types_, cm_, buffers));
  KILN_RETURN_IF_ERROR(CheckBuffer(workspace, algorithm.workspace_bytes, "gemm workspace"));
  KILN_ASSIGN_OR_RETURN(const CublasApi* api, handles_.cublas_api());
  LibraryHandles& handles = handles_;
  KILN_ASSIGN_OR_RETURN(cublasHandle_t handle, handles.Cublas(stream));
  KILN_RETURN_IF_ERROR(handles_.device().Activate());

  if (desc_.beta != 0 && !buffers.c.is_null() && buffers.c.ptr != buffers.out.ptr) {
    const uint64_t bytes = ColumnMajorBytes(cm_.c, cm_.batch, types_.d);
    KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(buffers.out, buffers.c, bytes));
  }
  KILN_RETURN_IF_ERROR(CublasStatus(
      *api, api->cublasSetWorkspace(handle, workspace.ptr, algorithm.workspace_bytes),
      "cublasSetWorkspace"));

  KILN_ASSIGN_OR_RETURN(cudaDataType a_type, CudaDataType(types_.a));
  KILN_ASSIGN_OR_RETURN(cudaDataType b_type, CudaDataType(types_.b));
  KILN_ASSIGN_OR_RETURN(cudaDataType c_type, CudaDataType(types_.d));
  const runtime::DeviceMemory& a = cm_.swapped ? buffers.rhs : buffers.lhs;
  const runtime::DeviceMemory& b = cm_.swapped ? buffers.lhs : buffers.rhs;
  const cublasOperation_t ta = cm_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = cm_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasGemmAlgo_t algo = static_cast<cublasGemmAlgo_t>(algorithm.cublas_algo);
  const cublasComputeType_t compute = CublasComputeType(types_.compute);
  const int m = static_cast<int>(cm_.m), n = static_cast<int>(cm_.n), k = static_cast<int>(cm_.k);
  const int lda = static_cast<int>(cm_.a.ld), ldb = static_cast<int>(cm_.b.ld),
            ldc = static_cast<int>(cm_.c.ld);
  if (cm_.batch == 1) {
    return CublasStatus(*api,
                        api->cublasGemmEx(handle, ta, tb, m, n, k, alpha_.data(), a.ptr, a_type,
                                          lda, b.ptr, b_type, ldb, beta_.data(), buffers.out.ptr,
                                          c_type, ldc, compute, algo),
                        StrCat("cublasGemmEx(", algorithm.description, ")"));
  }
  return CublasStatus(
      *api,
      api->cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, alpha_.data(), a.ptr, a_type, lda,
                                      cm_.a.batch_stride, b.ptr, b_type, ldb, cm_.b.batch_stride,
                                      beta_.data(), buffers.out.ptr, c_type, ldc,
                                      cm_.c.batch_stride, static_cast<int>(cm_.batch), compute,
                                      algo),
      StrCat("cublasGemmStridedBatchedEx(", algorithm.description, ")"));
}

}  // namespace kiln::cuda::libs
