// Internal to the HLO printer (printer*.cc): text helpers shared by the files that print
// modules, instructions and attribute families. Use printer.h.
#pragma once

#include <string>
#include <vector>

#include "kiln/hlo/module.h"
#include "kiln/hlo/printer.h"

namespace kiln {
namespace printer_internal {

// Shape in XLA's text form; tuples get "/*index=N*/" before every fifth element, layouts are
// printed when present (and `layout`), except the empty layout of a scalar.
void AppendShape(std::string& out, const Shape& shape, bool layout);
std::string ShapeText(const Shape& shape, bool layout);

// {1,0} (no spaces).
std::string IntListText(const std::vector<int64_t>& v);
// A name printed as an identifier if it is one, else as a quoted string.
std::string KeyText(const std::string& key);

std::string ShardingText(const HloSharding& s);
std::string MetadataText(const OpMetadata& m);
std::string FrontendAttributesText(const std::vector<std::pair<std::string, std::string>>& attrs);
std::string ReplicaGroupsText(const ReplicaGroups& g);
std::string WindowText(const Window& w);
std::string DimLabelsText(const ConvolutionDimensionNumbers& d);
std::string PaddingText(const std::vector<PaddingDimension>& p);
std::string ProgramShapeText(const ProgramShape& ps);

// Appends ", name=value" for every opcode-specific attribute of `instr` that differs from its
// default (printer_attributes.cc).
void AppendOpcodeAttributes(std::string& out, const HloInstruction& instr,
                            const PrintOptions& options);

}  // namespace printer_internal
}  // namespace kiln
