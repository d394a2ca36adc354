#pragma once
#include "kiln/base/status.h"
