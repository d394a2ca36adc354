// kiln compare MODULE.hlo: run on a device and on a reference (or read expected outputs) and
// compare every output within the tolerance of its type (src/kiln/eval/tolerance.h).
#include <cmath>
#include <iostream>
#include <optional>

#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/npy_literal.h"
#include "kiln/tools/autotune_options.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/participants.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

namespace {

struct CompareFlags {
  std::string module;
  std::string device;
  std::string reference = "interpreter";
  std::string expected;
  std::string inputs;
  uint64_t seed = 42;
  std::optional<double> rtol, atol;
  bool reference_tf32 = false;
  bool cast = false;
  bool fill_elided_constants = false;
  CompileFlags compile;
};

// Compiles the module for `device` and runs it on `args`.
StatusOr<Literal> CompileAndRun(const Client& client, const HloModule& module, const DeviceSelection& device,
                                const CompileOptions& options, std::span<const Literal> args, uint64_t seed,
                                bool* tf32, int* exit_code) {
  auto compiled = client.Compile(module, Client::DeviceName(device), options);
  *exit_code = compiled.ok() ? kExitFailure : CompileErrorExitCode(compiled.status());
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, std::move(compiled));
  *tf32 = exe->RunsF32ProductsInTf32();
  ExecuteOptions eo;
  eo.seed = seed;
  eo.poison = true;
  return exe->Run(args, eo);
}

// Stored outputs cannot be reproduced from random inputs: --expected without --inputs, from an
// .npz that holds no inputs either, is refused (exit 2) for a module with parameters.
int RefuseRandomInputsForExpected(const CompareFlags& f, const HloModule& module,
                                  const std::optional<LoadedNpz>& expected_npz, const InputOptions& io) {
  if (!expected_npz || !f.inputs.empty() || io.npz != nullptr) return 0;
  const HloComputation* entry = module.entry_computation();
  if (!entry || entry->num_parameters() == 0) return 0;
  PrintError(StrCat(f.expected, " holds no inputs (in0, ...) and --inputs was not given: the expected outputs "
                    "cannot be compared with a run on random inputs; give the inputs they were made from with "
                    "--inputs (or store them in the .npz as in0, in1, ...)"));
  return kExitUsage;
}

// Several participants: every participant's outputs against the reference's (or against the
// expected .npz's p<i>.out<j>), each within its type's tolerance.
int CompareParticipants(const CompareFlags& f, const Client& client, const HloModule& module,
                        const DeviceSelection& device, const std::optional<DeviceSelection>& reference,
                        const std::optional<LoadedNpz>& expected_npz, const CompileOptions& options,
                        int64_t replicas, int64_t partitions) {
  InputOptions io;
  io.npz_path = f.inputs;
  if (f.inputs.empty() && expected_npz && (expected_npz->Has("in0") || expected_npz->Has("p0.in0")))
    io.npz = &*expected_npz;
  if (int rc = RefuseRandomInputsForExpected(f, module, expected_npz, io)) return rc;
  io.seed = f.seed;
  io.allow_cast = f.cast;
  std::vector<std::string> notes;
  auto args = MakeParticipantInputs(module, replicas, partitions, io, &notes);
  if (!args.ok()) {
    PrintError(args.status().message());
    return InputErrorExitCode(args.status());
  }
  bool tf32 = false;
  auto run = [&](const DeviceSelection& d, bool* uses_tf32) -> StatusOr<std::vector<Literal>> {
    auto exe = client.Compile(module, Client::DeviceName(d), options);
    KILN_RETURN_IF_ERROR(exe.status());
    if ((*exe)->num_participants() != replicas * partitions)
      return Unimplemented(d.backend->name(), " runs one participant; ", module.name(), " asks for ",
                           replicas * partitions);
    *uses_tf32 |= (*exe)->RunsF32ProductsInTf32();
    ExecuteOptions eo;
    eo.seed = f.seed;
    eo.poison = true;
    return (*exe)->RunParticipants(*args, eo);
  };
  auto actual = run(device, &tf32);
  if (!actual.ok()) {
    PrintError(StrCat(device.backend->name(), ": ", actual.status().message()));
    return actual.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  std::vector<Literal> expected;
  std::string against;
  if (reference) {
    auto ref = run(*reference, &tf32);
    if (!ref.ok()) {
      PrintError(StrCat(reference->backend->name(), " (reference): ", ref.status().message()));
      return kExitFailure;
    }
    expected = std::move(*ref);
    against = StrCat(reference->backend->name(), ":", reference->ordinal);
  } else {
    against = f.expected;
  }
  CompareOptions co;
  co.rtol = f.rtol;
  co.atol = f.atol;
  co.reference_tf32 = f.reference_tf32 || tf32;
  co.outputs = AnalyzeOutputs(module);
  co.backend_vs_evaluator = reference && reference->backend->name() == "interpreter" &&
                            device.backend->name() != "interpreter";
  Comparison all;
  if (!reference && !expected_npz->Has("p0.out0")) {
    // A case of global outputs (jax's out0, out1, ...): join the participants' outputs by the
    // root's sharding and compare those.
    auto named = ParticipantOutputs(module, replicas, partitions, *actual);
    if (!named.ok()) {
      PrintError(named.status().message());
      return kExitFailure;
    }
    std::vector<const Literal*> a;
    for (const auto& [name, l] : *named)
      if (StartsWith(name, "out")) a.push_back(&l);
    std::vector<PrimitiveType> types;
    for (const Literal* l : a) types.push_back(l->shape().element_type());
    auto e = ReadExpectedOutputs(*expected_npz, types);
    if (!e.ok()) {
      PrintError(e.status().message());
      return kExitUsage;
    }
    std::vector<const Literal*> ep;
    for (const Literal& l : *e) ep.push_back(&l);
    if (a.size() != ep.size()) {
      PrintError(StrCat(f.expected, " holds ", ep.size(), " global outputs; the root's sharding joins ", a.size(),
                        " (p<i>.out<j> members compare per participant)"));
      return kExitFailure;
    }
    all = CompareLeaves(a, ep, co);
  }
  for (size_t i = 0; reference || expected_npz->Has("p0.out0") ? i < actual->size() : false; ++i) {
    std::vector<const Literal*> a = ArrayLeaves((*actual)[i]);
    std::vector<Literal> from_file;
    std::vector<const Literal*> e;
    if (reference) {
      e = ArrayLeaves(expected[i]);
    } else {
      for (size_t j = 0; j < a.size(); ++j) {
        const std::string name = StrCat("p", i, ".out", j);
        if (!expected_npz->Has(name)) {
          PrintError(StrCat(f.expected, ": no member '", name, "' (expected p<i>.out<j> for every participant)"));
          return kExitUsage;
        }
        auto l = expected_npz->AsLiteral(name);
        if (!l.ok()) {
          PrintError(l.status().message());
          return kExitUsage;
        }
        from_file.push_back(std::move(*l));
      }
      for (const Literal& l : from_file) e.push_back(&l);
    }
    Comparison c = CompareLeaves(a, e, co);
    for (ArrayComparison& ac : c.arrays) {
      ac.name = StrCat("p", i, ".", ac.name);
      all.arrays.push_back(std::move(ac));
    }
    if (!c.error.empty() && all.error.empty()) all.error = StrCat("participant ", i, ": ", c.error);
  }
  std::cout << "compare " << module.name() << ": " << device.backend->name() << ":" << device.ordinal << " vs "
            << against << ", " << actual->size() << " participants (" << replicas << " replicas x " << partitions
            << " partitions)\n";
  for (const std::string& n : notes) std::cout << "  " << n << "\n";
  std::cout << all.ToString();
  int failed = 0;
  for (const ArrayComparison& a : all.arrays) failed += !a.ok();
  if (all.ok()) {
    std::cout << "OK: " << all.arrays.size() << " outputs match\n";
    return kExitOk;
  }
  std::cout << "FAILED: " << failed << " of " << all.arrays.size() << " outputs differ"
            << (all.error.empty() ? "" : " (" + all.error + ")") << "\n";
  return kExitFailure;
}

int Compare(const CompareFlags& f, const Client& client) {
  auto device = client.SelectDevice(f.device);
  if (!device.ok()) {
    PrintError(device.status().message());
    return kExitUsage;
  }
  std::optional<DeviceSelection> reference;
  if (f.expected.empty()) {
    auto ref = client.SelectDevice(f.reference);
    if (!ref.ok()) {
      PrintError(ref.status().message());
      return kExitUsage;
    }
    reference = *ref;
  }
  LoadOptions lo;
  lo.fill_elided_constants = f.fill_elided_constants;
  lo.seed = f.seed;
  lo.verify = !f.compile.no_verify;
  auto module = LoadModule(f.module, lo);
  if (!module.ok()) {
    PrintLoadError(f.module, module.status().message());
    return kExitUsage;
  }
  // With --expected, a case.npz holds both the inputs in0.. and the outputs out0..: the inputs
  // come from it unless --inputs is given (or it has none).
  std::optional<LoadedNpz> expected_npz;
  if (!f.expected.empty()) {
    auto z = LoadedNpz::Read(f.expected);
    if (!z.ok()) {
      PrintError(z.status().message());
      return kExitUsage;
    }
    expected_npz = std::move(*z);
  }
  {
    CompileOptions options;
    std::pair<int64_t, int64_t> grid;
    if (int rc = CompileOptionsAndGrid(client, f.compile, **module, &options, &grid)) return rc;
    if (grid.first * grid.second > 1)
      return CompareParticipants(f, client, **module, *device, reference, expected_npz, options, grid.first,
                                 grid.second);
  }
  InputOptions io;
  io.npz_path = f.inputs;
  if (f.inputs.empty() && expected_npz && expected_npz->Has("in0")) io.npz = &*expected_npz;
  if (int rc = RefuseRandomInputsForExpected(f, **module, expected_npz, io)) return rc;
  io.seed = f.seed;
  io.allow_cast = f.cast;
  std::vector<std::string> notes;
  auto args = MakeInputs(**module, io, &notes);
  if (!args.ok()) {
    PrintError(args.status().message());
    return InputErrorExitCode(args.status());
  }
  auto options = MakeCompileOptions(client, f.compile);
  if (!options.ok()) {
    PrintError(options.status().message());
    return kExitUsage;
  }
  bool device_tf32 = false, reference_tf32 = false;
  int failure = kExitFailure;
  auto actual = CompileAndRun(client, **module, *device, *options, *args, f.seed, &device_tf32, &failure);
  if (!actual.ok()) {
    PrintError(StrCat(device->backend->name(), ": ", actual.status().message()));
    return failure;
  }
  std::vector<const Literal*> actual_leaves = ArrayLeaves(*actual);
  std::vector<Literal> expected_storage;
  std::vector<const Literal*> expected_leaves;
  std::string against;
  if (reference) {
    auto ref = CompileAndRun(client, **module, *reference, *options, *args, f.seed, &reference_tf32, &failure);
    if (!ref.ok()) {
      PrintError(StrCat(reference->backend->name(), " (reference): ", ref.status().message()));
      return failure;
    }
    expected_storage.push_back(std::move(*ref));
    expected_leaves = ArrayLeaves(expected_storage[0]);
    against = StrCat(reference->backend->name(), ":", reference->ordinal);
  } else {
    std::vector<PrimitiveType> types;
    for (const Literal* l : actual_leaves) types.push_back(l->shape().element_type());
    auto expected = ReadExpectedOutputs(*expected_npz, types);
    if (!expected.ok()) {
      PrintError(expected.status().message());
      return kExitUsage;
    }
    expected_storage = std::move(*expected);
    for (const Literal& l : expected_storage) expected_leaves.push_back(&l);
    against = f.expected;
  }
  CompareOptions co;
  co.rtol = f.rtol;
  co.atol = f.atol;
  co.reference_tf32 = f.reference_tf32 || device_tf32 || reference_tf32;
  // Exact where no arithmetic produced the output; TF32 only where an f32 dot or convolution did.
  co.outputs = AnalyzeOutputs(**module);
  // A compiled backend against the evaluator: reassociation slack (tolerance.h).
  co.backend_vs_evaluator = reference && reference->backend->name() == "interpreter" &&
                            device->backend->name() != "interpreter";
  Comparison c = CompareLeaves(actual_leaves, expected_leaves, co);
  std::cout << "compare " << (*module)->name() << ": " << device->backend->name() << ":"
            << device->ordinal << " vs " << against << "\n";
  for (const std::string& n : notes) std::cout << "  " << n << "\n";
  std::cout << c.ToString();
  int failed = 0;
  for (const ArrayComparison& a : c.arrays) failed += !a.ok();
  if (c.ok()) {
    std::cout << "OK: " << c.arrays.size() << (c.arrays.size() == 1 ? " output matches\n" : " outputs match\n");
    return kExitOk;
  }
  std::cout << "FAILED: " << failed << " of " << c.arrays.size() << " outputs differ"
            << (c.error.empty() ? "" : " (" + c.error + ")") << "\n";
  return kExitFailure;
}

}  // namespace

void AddCompareCommand(CLI::App& app, const Client& client, int* exit_code) {
  auto flags = std::make_shared<CompareFlags>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Run a module on a device and a reference (or against stored outputs) and compare");
  cmd->add_option("module", flags->module, "HLO text file")->required();
  cmd->add_option("--device", flags->device, "device under test (default: the best available)")
      ->check(DeviceNameValidator());
  CLI::Option* reference = cmd->add_option("--reference", flags->reference, "reference device")
                               ->capture_default_str()
                               ->check(DeviceNameValidator());
  cmd->add_option("--expected", flags->expected,
                  ".npz with the expected outputs out0, out1, ... instead of a reference run; "
                  "its in0, in1, ... are the inputs unless --inputs is given")
      ->excludes(reference);
  cmd->add_option("--inputs", flags->inputs, ".npz with in0, in1, ... (default: random from --seed)");
  cmd->add_option("--seed", flags->seed, "seed of random inputs")->capture_default_str()
      ->check(SeedValidator());
  // A tolerance is a finite number >= 0 (NaN would pass everything; a negative one nothing).
  const auto tolerance = CLI::Validator(
      [](std::string& v) -> std::string {
        try {
          size_t used = 0;
          const double x = std::stod(v, &used);
          if (used == v.size() && std::isfinite(x) && x >= 0) return "";
        } catch (...) {
        }
        return "must be a finite number >= 0, not '" + v + "'";
      },
      "TOLERANCE");
  cmd->add_option("--rtol", flags->rtol, "relative tolerance for floating outputs (default: per type)")
      ->check(tolerance);
  cmd->add_option("--atol", flags->atol, "absolute tolerance for floating outputs (default: per type)")
      ->check(tolerance);
  cmd->add_flag("--reference-tf32", flags->reference_tf32,
                "the expected f32 results were computed with TF32 dots (XLA on NVIDIA GPUs)");
  cmd->add_flag("--cast", flags->cast, "convert inputs that do not fit the parameter type exactly");
  cmd->add_flag("--fill-elided-constants", flags->fill_elided_constants,
                "fill constants printed as {...} with random values");
  cmd->add_flag("--no-verify", flags->compile.no_verify, "skip the HLO verifier");
  // No autotuning in compare: both sides run their default choices.
  flags->compile.autotune.level = "off";
  AddCompileFlags(cmd, &flags->compile, /*autotune=*/false);
  cmd->footer(
      "Exit status: 0 when every output matches, 1 when one differs or a run fails, 2 on bad input.\n"
      "Examples:\n"
      "  kiln compare model.hlo --device cpu --reference interpreter\n"
      "  kiln compare module.hlo --expected case.npz --reference-tf32\n");
  cmd->callback([flags, &client, exit_code] { *exit_code = Compare(*flags, client); });
}

}  // namespace kiln
