// CacheKey: what an autotuning result depends on, and the name of the file it is stored in.
//
// A result is valid for exactly one
//   - device: everything about it that changes which config is fastest or valid (see
//     DeviceKeyJson: name, compute capability or gfx architecture, multiprocessors, clocks, memory size, bus width
//     and bandwidth, L2, shared memory, driver/runtime/library versions; never the UUID or PCI
//     address, so identical GPUs share entries);
//   - backend set: every backend's name and version, in the factory's order (a library
//     upgrade, or excluding a backend, asks for new measurements);
//   - selection policy: "fastest" or "deterministic";
//   - instruction: InstructionFingerprint (hlo/printer.h), the canonical text of the instruction
//     with operand shapes and layouts and the computations it calls; names and metadata do not
//     count. Computed before Apply writes anything into the instruction.
//   - kiln cache version (kAutotuneCacheVersion), bumped when kiln changes how it measures,
//     validates or applies configs.
// The file name is the SHA-256 of all parts but the version, which is checked inside the file
// instead: an entry written by another kiln version then sits at the same name, is recognized
// as foreign, and is replaced in place rather than left behind forever.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/autotune/backend.h"
#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"
#include "kiln/runtime/device_description.h"

namespace kiln::autotune {

// Bump when measurement, validation or the meaning of stored configs changes.
inline constexpr int kAutotuneCacheVersion = 1;

// The device part of a key as a JSON object of its fields. The host platform leaves its clock
// out: /proc/cpuinfo reports the current frequency, which scaling changes from second to second.
nlohmann::json DeviceKeyJson(const runtime::DeviceDescription& device);

struct CacheKey {
  nlohmann::json device = nlohmann::json::object();  // DeviceKeyJson
  std::vector<std::pair<std::string, std::string>> backends;  // (name, version), factory order
  bool deterministic = false;
  std::string instruction;  // InstructionFingerprint (64 hex digits)
  int version = kAutotuneCacheVersion;

  // 64 hex digits of SHA-256 over the canonical text of every part except `version`.
  std::string Hash() const;
  // A short readable device name for listings: "NVIDIA H200 (9.0)".
  std::string DeviceSummary() const;

  nlohmann::json ToJson() const;
  // InvalidArgument when `j` lacks a part or has one of the wrong type.
  static StatusOr<CacheKey> FromJson(const nlohmann::json& j);

  friend bool operator==(const CacheKey&, const CacheKey&) = default;
};

CacheKey MakeCacheKey(const runtime::DeviceDescription& device,
                      std::span<const Backend* const> backends, bool deterministic,
                      const HloInstruction& instr);

}  // namespace kiln::autotune
