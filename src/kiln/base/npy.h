// NumPy .npy and .npz files: bytes, dtype and shape, nothing more.
//
// This layer knows numpy's container formats, not kiln's types; src/kiln/hlo/npy_literal.h maps
// arrays to and from Literals (and documents the dtype conventions, see docs/npz.md).
//
// Reading accepts:
//   - .npy format versions 1.0, 2.0 and 3.0 (3.0: UTF-8 header);
//   - little-endian ('<'), big-endian ('>'), native ('=') and byte-order-free ('|') descrs;
//   - C order and Fortran order;
//   - dtypes b1, i1/i2/i4/i8, u1/u2/u4/u8, f2/f4/f8, c8/c16, V<n> (raw bytes, as ml_dtypes
//     writes bfloat16 and the float8 types) and S<n> (byte strings).
//   Structured dtypes (a list descr) and object arrays are rejected with InvalidArgument.
// After reading, data is always little-endian and in C (row-major) order: the reader
// byte-swaps and transposes as needed, so callers see one layout.
//
// .npz is a zip archive of .npy members. Reading accepts stored and deflated members, zip64
// archives (numpy's savez writes zip64 local headers), data descriptors and archive comments;
// CRC-32 is checked. Writing produces stored (uncompressed) members, zip64 only where a size
// or offset needs it, with names "<name>.npy" as numpy's savez does.
//
// Errors are values: malformed files give InvalidArgument/DataLoss naming the file and member.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"

namespace kiln {

// A numpy dtype of a plain (non-structured) array.
struct NpyDtype {
  // 'b' bool, 'i' signed integer, 'u' unsigned integer, 'f' float, 'c' complex,
  // 'V' raw bytes (void), 'S' byte string.
  char kind = 'f';
  int itemsize = 4;  // bytes per element

  // The little-endian descr numpy writes: "<f4", "|b1", "|u1", "|V2", "|S5".
  std::string Descr() const;
  bool operator==(const NpyDtype& o) const = default;
};

// Parses a descr ("<f4", ">i8", "|V2", "bool"-style names are not accepted). Sets *big_endian
// for '>' descrs whose itemsize is over one byte.
StatusOr<NpyDtype> ParseNpyDescr(std::string_view descr, bool* big_endian = nullptr);

// One array: little-endian elements in C order.
struct NpyArray {
  NpyDtype dtype;
  std::vector<int64_t> shape;  // {} for a 0-d array
  std::vector<uint8_t> data;   // num_elements() * dtype.itemsize bytes

  int64_t num_elements() const;
  // "<f4 (2, 3)"-style short description for messages.
  std::string Describe() const;
};

// Builds an array of `dtype` and `shape` holding a copy of `bytes` (must be the right size).
StatusOr<NpyArray> MakeNpyArray(NpyDtype dtype, std::vector<int64_t> shape,
                                std::string_view bytes);

// ---- .npy ----

// Parses a whole .npy file image. `what` names it in error messages (a path, "x.npz:in0").
StatusOr<NpyArray> ParseNpy(std::string_view bytes, std::string_view what = "<npy>");
// Serializes to a .npy image: format 1.0 (2.0 if the header does not fit), C order, header
// padded so that the data starts at a multiple of 64 bytes.
std::string SerializeNpy(const NpyArray& array);

StatusOr<NpyArray> ReadNpyFile(const std::string& path);
Status WriteNpyFile(const std::string& path, const NpyArray& array);

// ---- .npz ----

struct NpzMember {
  std::string name;  // without the ".npy" suffix, as np.load(...).files lists it
  NpyArray array;
};

struct NpzWriteOptions {
  // Write zip64 extra fields and the zip64 end records even for small archives (tests use it
  // to exercise the zip64 path without multi-gigabyte files). Default: only where needed.
  bool force_zip64 = false;
};

// Parses a whole .npz image; members in archive order. Members whose name does not end in
// ".npy" are rejected (numpy's savez writes only .npy members).
StatusOr<std::vector<NpzMember>> ParseNpz(std::string_view bytes, std::string_view what = "<npz>");
std::string SerializeNpz(const std::vector<NpzMember>& members, const NpzWriteOptions& options = {});

StatusOr<std::vector<NpzMember>> ReadNpzFile(const std::string& path);
// Writes the archive to `path` (via a temporary file renamed into place).
Status WriteNpzFile(const std::string& path, const std::vector<NpzMember>& members,
                    const NpzWriteOptions& options = {});

// Reads a whole file into memory (shared by the readers above; handy for tests).
StatusOr<std::string> ReadFileToString(const std::string& path);
// Writes `data` to `path` atomically (temporary file in the same folder, then rename).
Status WriteStringToFile(const std::string& path, std::string_view data);

}  // namespace kiln
