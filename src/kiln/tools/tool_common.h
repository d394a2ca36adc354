// Pieces shared by the `kiln` subcommands: loading a module, making its inputs, summarizing
// and writing its outputs, and the exit-code convention.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"

namespace kiln {

// Exit codes of every subcommand.
inline constexpr int kExitOk = 0;       // success
inline constexpr int kExitFailure = 1;  // a run failed, or results differ
inline constexpr int kExitUsage = 2;    // bad arguments, unreadable or malformed input

// The exit code of a failure to make a run's inputs: inputs the host cannot hold
// (ResourceExhausted: random inputs of a 2^40-element parameter) are a failed run, anything
// else (a missing member, a file that is a directory) unusable input.
inline int InputErrorExitCode(const Status& status) {
  return status.code() == StatusCode::kResourceExhausted ? kExitFailure : kExitUsage;
}

// The exit code of a failed Compile: InvalidArgument (a bad backend flag value, a module the
// backend refuses as invalid) is bad usage or input, anything else (unsupported, out of
// memory) a failed run.
inline int CompileErrorExitCode(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

// Prints "kiln: <message>" to stderr.
void PrintError(std::string_view message);
// Prints an error of LoadModule: parse errors ("FILE:LINE:COL: ..." with the line and a caret)
// as they come, anything else through PrintError.
void PrintLoadError(const std::string& path, std::string_view message);

struct LoadOptions {
  bool fill_elided_constants = false;  // --fill-elided-constants
  uint64_t seed = 42;                  // seeds elided-constant filling
  bool verify = true;                  // run the verifier after parsing
};

// Reads, parses and verifies a module file. Without `verify`, the module still passes
// CheckOperandsInRange (hlo/shape_inference.h): no call cycles, operands in range, declared
// shapes of the operands' extent.
StatusOr<std::unique_ptr<HloModule>> LoadModule(const std::string& path, const LoadOptions& options);

class LoadedNpz;

struct InputOptions {
  std::string npz_path;            // read inputs from this .npz; empty: random inputs
  const LoadedNpz* npz = nullptr;  // or from this one, already read
  uint64_t seed = 42;
  bool allow_cast = false;  // --cast
};

// One literal per entry parameter: from the npz (member "in<i>", else the parameter's name),
// or random (MakeRandomArguments with the seed). `notes` receives one line per input saying
// where it came from.
StatusOr<std::vector<Literal>> MakeInputs(const HloModule& module, const InputOptions& options,
                                          std::vector<std::string>* notes);

// One line about an array: "out0 f32[32,64] 8.00 KiB  min -1.2 max 3.4 mean 0.05  NaN 0 inf 0
// {0.1, 0.2, ...}" with up to `max_values` values.
std::string SummarizeArray(const Literal& array, std::string_view name, int64_t max_values = 6);

// The values of an array, numpy style, nested by dimension, at most `limit` elements before
// "...".
std::string FormatArrayValues(const Literal& array, int64_t limit);

// Writes the array leaves of `result` as out0, out1, ... (see npy_literal.h for dtypes).
Status WriteOutputs(const std::string& path, const Literal& result, bool raw_bits);

// Reads expected outputs out0, out1, ... from an npz, as the literals they stand for; raw-byte
// members (ml_dtypes' '<V2' bfloat16) are read as bits of the element type of the matching
// entry of `result_types`.
StatusOr<std::vector<Literal>> ReadExpectedOutputs(const LoadedNpz& npz,
                                                   const std::vector<PrimitiveType>& result_types);

}  // namespace kiln
