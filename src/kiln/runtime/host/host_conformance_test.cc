// The conformance suite on the host driver.
#include "kiln/runtime/cts/conformance.h"

namespace kiln::runtime::cts {

INSTANTIATE_TEST_SUITE_P(Host, ConformanceTest, ::testing::Values(HostCtsDriver()),
                         CtsDriverName);

}  // namespace kiln::runtime::cts
