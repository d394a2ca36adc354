// libkiln.so: the public API (client.h) and everything behind it, linked from the static rooms
// (api/CMakeLists.txt). This file only gives the library a translation unit of its own.
#include "kiln/api/kiln.h"
