// kiln run MODULE.hlo: parse, verify, make inputs, run on one device, summarize the outputs.
#include <chrono>
#include <iostream>
#include <limits>

#include "kiln/base/strings.h"
#include "kiln/autotune/autotuner.h"
#include "kiln/eval/compare.h"
#include "kiln/tools/autotune_options.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/participants.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

namespace {

struct RunFlags {
  std::string module;
  std::string device;
  std::string inputs;
  std::string outputs;
  uint64_t seed = 42;
  bool print = false;
  int64_t print_limit = 1000;
  bool cast = false;
  bool fill_elided_constants = false;
  bool raw_bits = false;
  CompileFlags compile;
};

// A run over several participants (docs/collectives.md): inputs and outputs by the .npz
// convention of docs/npz.md (p<i>.in<k>, p<i>.out<j>, global in<k>/out<j> by sharding).
int RunParticipants(const RunFlags& f, const Client& client, const HloModule& module, const DeviceSelection& device,
                    const CompileOptions& options, int64_t replicas, int64_t partitions) {
  InputOptions io;
  io.npz_path = f.inputs;
  io.seed = f.seed;
  io.allow_cast = f.cast;
  std::vector<std::string> notes;
  auto args = MakeParticipantInputs(module, replicas, partitions, io, &notes);
  if (!args.ok()) {
    PrintError(args.status().message());
    return InputErrorExitCode(args.status());
  }
  const std::string where = Client::DeviceName(device);
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Executable> compiled;
  if (int rc = CompileForParticipants(client, module, device, options, replicas, partitions, &compiled)) return rc;
  std::unique_ptr<Executable>* exe = &compiled;
  std::cerr << HostFallbackLine((*exe)->compile_report().host_fallbacks);
  ExecuteOptions eo;
  eo.seed = f.seed;
  eo.poison = true;
  auto results = (*exe)->RunParticipants(*args, eo);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!results.ok()) {
    PrintError(StrCat(device.backend->name(), ": ", results.status().message()));
    return kExitFailure;
  }
  // A run over several processes (cuda under mpirun): this process has its participants'
  // results only, and writes them to <stem>.rank<R>.npz (docs/collectives.md).
  const std::vector<int64_t> local = (*exe)->local_participants();
  const bool partial = static_cast<int64_t>(local.size()) < replicas * partitions && !local.empty();
  StatusOr<std::vector<std::pair<std::string, Literal>>> named =
      partial ? StatusOr<std::vector<std::pair<std::string, Literal>>>(std::vector<std::pair<std::string, Literal>>{})
              : ParticipantOutputs(module, replicas, partitions, *results);
  if (!named.ok()) {
    PrintError(named.status().message());
    return kExitFailure;
  }
  std::string outputs = f.outputs;
  if (partial) {
    for (int64_t i : local) {
      std::vector<Literal> leaves = FlattenLiteral((*results)[i]);
      for (size_t j = 0; j < leaves.size(); ++j) named->emplace_back(StrCat("p", i, ".out", j), std::move(leaves[j]));
    }
    const int64_t rank = local[0] / static_cast<int64_t>(local.size());
    if (!outputs.empty()) {
      const size_t dot = outputs.rfind(".npz");
      outputs = dot == std::string::npos ? StrCat(outputs, ".rank", rank) : StrCat(outputs.substr(0, dot), ".rank", rank, ".npz");
    }
  }
  std::cout << "module " << module.name() << ": " << replicas * partitions << " participants (" << replicas
            << " replicas x " << partitions << " partitions"
            << (partial ? StrCat("; this process ran ", StrJoin(local, ","), "") : std::string()) << "), "
            << (*args)[0].size() << " parameter"
            << ((*args)[0].size() == 1 ? "" : "s") << " each; ran on " << where << " in "
            << RoundTripDouble(std::round(ms * 1000) / 1000) << " ms\n";
  for (const std::string& n : notes) std::cout << "  " << n << "\n";
  for (const auto& [name, l] : *named) {
    std::cout << SummarizeArray(l, name) << "\n";
    if (f.print) std::cout << FormatArrayValues(l, f.print_limit) << "\n";
  }
  if (!outputs.empty()) {
    Status s = WriteNamedOutputs(outputs, *named, f.raw_bits);
    if (!s.ok()) {
      PrintError(s.message());
      return kExitFailure;
    }
    std::cout << "wrote " << outputs << "\n";
  }
  return kExitOk;
}

int Run(const RunFlags& f, const Client& client) {
  auto device = client.SelectDevice(f.device);
  if (!device.ok()) {
    PrintError(device.status().message());
    return kExitUsage;
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
  CompileOptions compile_options;
  std::pair<int64_t, int64_t> participants;
  if (int rc = CompileOptionsAndGrid(client, f.compile, **module, &compile_options, &participants)) return rc;
  if (participants.first * participants.second > 1)
    return RunParticipants(f, client, **module, *device, compile_options, participants.first, participants.second);
  std::optional<CompileOptions> options = std::move(compile_options);
  InputOptions io;
  io.npz_path = f.inputs;
  io.seed = f.seed;
  io.allow_cast = f.cast;
  std::vector<std::string> notes;
  auto args = MakeInputs(**module, io, &notes);
  if (!args.ok()) {
    PrintError(args.status().message());
    return InputErrorExitCode(args.status());
  }
  const std::string where = Client::DeviceName(*device);
  auto start = std::chrono::steady_clock::now();
  auto exe = client.Compile(**module, where, *options);
  if (!exe.ok()) {
    PrintError(StrCat(device->backend->name(), ": ", exe.status().message()));
    return CompileErrorExitCode(exe.status());
  }
  if (const auto& tuned = (*exe)->compile_report().autotune) std::cerr << tuned->SummaryLine() << "\n";
  // What ran on the evaluator instead of a native kernel (none on the interpreter: it is one).
  std::cerr << HostFallbackLine((*exe)->compile_report().host_fallbacks);
  ExecuteOptions eo;
  eo.seed = f.seed;
  eo.poison = true;  // an element no kernel writes comes back as NaN, never as a lucky value
  StatusOr<Literal> result = (*exe)->Run(*args, eo);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    PrintError(StrCat(device->backend->name(), ": ", result.status().message()));
    return kExitFailure;
  }
  std::vector<const Literal*> leaves = ArrayLeaves(*result);
  std::cout << "module " << (*module)->name() << ": " << args->size() << " parameter"
            << (args->size() == 1 ? "" : "s") << ", " << leaves.size() << " output"
            << (leaves.size() == 1 ? "" : "s") << "; ran on " << where << " in " << RoundTripDouble(std::round(ms * 1000) / 1000) << " ms\n";
  for (const std::string& n : notes) std::cout << "  " << n << "\n";
  for (size_t i = 0; i < leaves.size(); ++i) {
    std::cout << SummarizeArray(*leaves[i], StrCat("out", i)) << "\n";
    if (f.print) std::cout << FormatArrayValues(*leaves[i], f.print_limit) << "\n";
  }
  if (!f.outputs.empty()) {
    Status s = WriteOutputs(f.outputs, *result, f.raw_bits);
    if (!s.ok()) {
      PrintError(s.message());
      return kExitFailure;
    }
    std::cout << "wrote " << f.outputs << "\n";
  }
  return kExitOk;
}

}  // namespace

void AddRunCommand(CLI::App& app, const Client& client, int* exit_code) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "Run a module and summarize its outputs");
  cmd->add_option("module", flags->module, "HLO text file (as JAX or XLA dump it)")->required();
  cmd->add_option("--device", flags->device,
                  "where to run: interpreter | cpu | cuda | rocm, optionally NAME:ORDINAL "
                  "(default: the best available)")
      ->check(DeviceNameValidator());
  cmd->add_option("--inputs", flags->inputs,
                  ".npz with in0, in1, ... (or members named after the parameters); default: "
                  "random inputs from --seed");
  cmd->add_option("--outputs", flags->outputs, "write the outputs to this .npz as out0, out1, ...");
  cmd->add_option("--seed", flags->seed, "seed of random inputs, elided constants and rng ops")
      ->capture_default_str()
      ->check(SeedValidator());
  cmd->add_flag("--print", flags->print, "print the output values");
  cmd->add_option("--print-limit", flags->print_limit, "most values --print shows per output (>= 0)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
  cmd->add_flag("--cast", flags->cast,
                "convert inputs whose values do not fit the parameter type exactly (f32 -> s32, "
                "f64 -> f32, ...)");
  cmd->add_flag("--fill-elided-constants", flags->fill_elided_constants,
                "fill constants printed as {...} with random values instead of failing");
  cmd->add_flag("--raw-bits", flags->raw_bits,
                "write bf16/f8/f4/sub-byte outputs as raw bits with a .kiln_dtype companion "
                "(default: widened to f32 / int8)");
  cmd->add_flag("--no-verify", flags->compile.no_verify, "skip the HLO verifier");
  AddCompileFlags(cmd, &flags->compile);
  cmd->footer(
      "Examples:\n"
      "  kiln run examples/mlp.hlo --print\n"
      "  kiln run model.hlo --inputs case.npz --outputs out.npz\n"
      "  kiln run model.hlo --device interpreter --seed 7\n"
      "  kiln run allreduce.hlo --device cpu --replicas 4 --inputs per_device.npz --outputs out.npz\n");
  cmd->callback([flags, &client, exit_code] { *exit_code = Run(*flags, client); });
}

}  // namespace kiln
