// PLACEHOLDER: the full printer lands with the parser (issue 2); this prints a minimal form.
#include "kiln/hlo/printer.h"

#include "kiln/base/fingerprint.h"
#include "kiln/base/strings.h"

namespace kiln {

PrintOptions PrintOptions::Canonical() {
  PrintOptions o;
  o.canonical = true;
  o.print_metadata = false;
  o.print_stack_frames = false;
  return o;
}

PrintOptions PrintOptions::ShortParsable() {
  PrintOptions o;
  o.print_metadata = false;
  o.print_operand_shapes = false;
  return o;
}

std::string PrintLiteralValue(const Literal& literal) { return literal.ToShortString(1 << 30); }

std::string PrintInstruction(const HloInstruction& instr, const PrintOptions&) {
  std::string s = instr.name() + " = " + instr.shape().ToString() + " " +
                  std::string(HloOpcodeString(instr.opcode())) + "(";
  s += StrJoin(instr.operands(), ", ", [](std::ostream& os, const HloInstruction* o) { os << o->name(); });
  s += ")";
  return s;
}

std::string PrintComputation(const HloComputation& c, const PrintOptions& o) {
  std::string s = c.name() + " {\n";
  for (HloInstruction* i : c.instructions()) s += "  " + PrintInstruction(*i, o) + "\n";
  return s + "}\n";
}

std::string PrintModule(const HloModule& m, const PrintOptions& o) {
  std::string s = "HloModule " + m.name() + "\n\n";
  for (HloComputation* c : m.computations()) s += PrintComputation(*c, o) + "\n";
  return s;
}

std::string InstructionFingerprint(const HloInstruction& i) {
  return Sha256Hex(PrintInstruction(i, PrintOptions::Canonical()));
}

std::string HloInstruction::ToString() const { return PrintInstruction(*this); }
std::string HloComputation::ToString() const { return PrintComputation(*this); }
std::string HloModule::ToString() const { return PrintModule(*this); }
std::string HloModule::Fingerprint() const { return Sha256Hex(PrintModule(*this, PrintOptions::Canonical())); }

}  // namespace kiln
