// The whole public C++ API of kiln in one include: Client (api/client.h), Executable and
// Buffer (backend/), the options, and FromEnvironment (api/environment.h).
#pragma once

#include "kiln/api/client.h"
#include "kiln/api/environment.h"
#include "kiln/backend/buffer.h"
#include "kiln/backend/executable.h"
#include "kiln/backend/options.h"
#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"
