// kiln info MODULE.hlo: what a module holds and how much work it is.
#include <cstdio>
#include <iostream>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/module_stats.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

namespace {

// 1234567 -> "1.23 M"
std::string HumanCount(double v) {
  const char* units[] = {"", " K", " M", " G", " T", " P"};
  int u = 0;
  while (v >= 1000 && u < 5) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.3g%s", v, units[u]);
  return buf;
}

void ListLeaves(const Shape& shape, const std::string& name, int64_t* counter, std::ostream& os) {
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) ListLeaves(s, name, counter, os);
    return;
  }
  if (!shape.IsArray()) return;
  os << "  " << name << (*counter)++ << "  " << shape.ToString(false) << "  "
     << HumanBytes(static_cast<uint64_t>(shape.byte_size())) << "\n";
}

int Info(const std::string& path, bool fill, bool no_verify) {
  LoadOptions lo;
  lo.fill_elided_constants = fill;
  lo.verify = !no_verify;
  auto module = LoadModule(path, lo);
  if (!module.ok()) {
    PrintLoadError(path, module.status().message());
    return kExitUsage;
  }
  const HloModule& m = **module;
  ModuleStats stats = ComputeModuleStats(m);
  std::ostream& os = std::cout;
  os << "module " << m.name() << ": " << stats.computations << " computation"
     << (stats.computations == 1 ? "" : "s") << ", " << stats.instructions << " instructions\n";
  const HloComputation* entry = m.entry_computation();
  os << "parameters (" << (entry ? entry->num_parameters() : 0) << "):\n";
  if (entry) {
    for (const HloInstruction* p : entry->parameter_instructions())
      os << "  " << p->parameter_number() << "  " << p->name() << "  " << p->shape().ToString(false)
         << "  " << HumanBytes(static_cast<uint64_t>(p->shape().byte_size())) << "\n";
    os << "outputs:\n";
    int64_t counter = 0;
    if (entry->root_instruction()) ListLeaves(entry->root_instruction()->shape(), "out", &counter, os);
  }
  os << "bytes: parameters " << HumanBytes(stats.parameter_bytes) << ", outputs "
     << HumanBytes(stats.output_bytes) << ", total "
     << HumanBytes(stats.parameter_bytes + stats.output_bytes) << "\n";
  os << "flops: " << HumanCount(stats.flops) << " (" << RoundTripDouble(stats.flops)
     << "), transcendentals: " << HumanCount(stats.transcendentals);
  if (stats.while_loops) os << "; " << stats.while_loops << " while loop(s) counted once";
  os << "\n";
  if (stats.parameter_bytes + stats.output_bytes > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", stats.flops / double(stats.parameter_bytes + stats.output_bytes));
    os << "arithmetic intensity: " << buf << " flops/byte (parameters + outputs)\n";
  }
  os << "ops:\n";
  for (const auto& [op, count] : stats.op_histogram) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "  %-28s %lld\n", op.c_str(), static_cast<long long>(count));
    os << buf;
  }
  return kExitOk;
}

}  // namespace

void AddInfoCommand(CLI::App& app, int* exit_code) {
  auto path = std::make_shared<std::string>();
  auto fill = std::make_shared<bool>(false);
  auto no_verify = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "info", "Op histogram, parameters and outputs with sizes, FLOP and byte counts");
  cmd->add_option("module", *path, "HLO text file")->required();
  cmd->add_flag("--fill-elided-constants", *fill, "accept constants printed as {...}");
  cmd->add_flag("--no-verify", *no_verify, "skip the HLO verifier");
  cmd->footer("FLOP rules: docs/cli.md (dot/convolution 2 per multiply-add, elementwise 1 per element).\n");
  cmd->callback([path, fill, no_verify, exit_code] { *exit_code = Info(*path, *fill, *no_verify); });
}

}  // namespace kiln
