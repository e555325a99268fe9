// The one way the glue includes PostgreSQL: C headers in C linkage,
// postgres.h first. Only files under src/pg include this, and after every
// C++ standard header they need: PostgreSQL's port.h redefines names such as
// vsnprintf that <string> and friends use.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/timestamp.h"
}
