// Compiles an HLO file and runs it on whatever device is present, through kiln's public API.
//   embed MODULE.hlo [DEVICE]      (DEVICE: cpu, cuda:0, interpreter; default: the best one)
#include <cstdio>

#include "kiln/api/kiln.h"
#include "kiln/hlo/random_literal.h"

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: %s MODULE.hlo [DEVICE]\n", argv[0]), 2;
  auto client = kiln::Client::Create();
  if (!client.ok()) return std::fprintf(stderr, "%s\n", client.status().ToString().c_str()), 1;
  auto module = kiln::ParseModuleFile(argv[1]);
  if (!module.ok()) return std::fprintf(stderr, "%s\n", module.status().ToString().c_str()), 2;
  auto exe = (*client)->Compile(**module, argc > 2 ? argv[2] : "");
  if (!exe.ok()) return std::fprintf(stderr, "%s\n", exe.status().ToString().c_str()), 1;
  std::vector<kiln::Shape> shapes;  // one random input per parameter
  for (const kiln::HloInstruction* p : (*module)->entry_computation()->parameter_instructions())
    shapes.push_back(p->shape());
  auto result = (*exe)->Run(kiln::MakeRandomArguments(shapes, /*seed=*/42));
  if (!result.ok()) return std::fprintf(stderr, "%s\n", result.status().ToString().c_str()), 1;
  std::printf("%s on %s:%d: %s\n", (*exe)->module_name().c_str(), (*exe)->platform().c_str(),
              (*exe)->device_ordinal(), result->shape().ToString().c_str());
  for (const auto& leaf : kiln::FlattenLiteral(*result))
    std::printf("  %s first element %g\n", leaf.shape().ToString().c_str(),
                leaf.element_count() > 0 ? leaf.GetAsDouble(0) : 0.0);
  return 0;
}
