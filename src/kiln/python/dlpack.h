// The DLPack ABI (https://github.com/dmlc/dlpack, include/dlpack/dlpack.h, v1.1): the structs and
// codes kiln's Python package exchanges arrays through. Written out here (it is a stable C ABI
// of a few structs) so that the build downloads nothing.
//
// Two capsule kinds travel through `__dlpack__`:
//   "dltensor_versioned"  DLManagedTensorVersioned (DLPack >= 1.0): a version and flags
//                         (read-only, copied) beside the tensor;
//   "dltensor"            DLManagedTensor, the legacy one (jax 0.10 still makes and wants it).
// A consumer renames the capsule "used_dltensor[_versioned]" once it owns the tensor and calls
// its deleter when done; a capsule destroyed unused calls the deleter itself.
#pragma once

#include <cstdint>

extern "C" {

inline constexpr uint32_t kDlpackMajorVersion = 1;
inline constexpr uint32_t kDlpackMinorVersion = 1;

enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLCUDAManaged = 13,
};

struct DLDevice {
  int32_t device_type;  // DLDeviceType
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
  // DLPack 1.1: the narrow floats, by their ml_dtypes names.
  kDLFloat8_e3m4 = 7,
  kDLFloat8_e4m3 = 8,
  kDLFloat8_e4m3b11fnuz = 9,
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e4m3fnuz = 11,
  kDLFloat8_e5m2 = 12,
  kDLFloat8_e5m2fnuz = 13,
  kDLFloat8_e8m0fnu = 14,
  kDLFloat6_e2m3fn = 15,
  kDLFloat6_e3m2fn = 16,
  kDLFloat4_e2m1fn = 17,
};

struct DLDataType {
  uint8_t code;  // DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

inline constexpr uint64_t kDLFlagBitmaskReadOnly = 1ull << 0;
inline constexpr uint64_t kDLFlagBitmaskIsCopied = 1ull << 1;

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // extern "C"
