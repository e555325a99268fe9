# shardid: PostgreSQL extension in C++, built with PGXS.
EXTENSION = shardid
MODULE_big = shardid

CORE_OBJS = src/core/schemes.o
PG_OBJS = src/pg/module.o src/pg/guard.o src/pg/shmem.o src/pg/timeconv.o src/pg/trace.o
OBJS = $(CORE_OBJS) $(PG_OBJS)

DATA = $(wildcard sql/shardid--*.sql)

# pg_regress: sql/<test>.sql against expected/<test>.out, in a throwaway
# instance configured by test/regress/regress.conf.
REGRESS = trace_id guc
REGRESS_OPTS = --temp-instance=tmp_check --temp-config=test/regress/regress.conf

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -I$(srcdir)/src -isystem $(includedir_server)
PG_CXXFLAGS = -std=c++17 -Wextra -Werror=return-type
# PGXS links with $(CC): bring in the C++ runtime.
SHLIB_LINK += -lstdc++
# PGXS would also compile each .cpp to LLVM bitcode with clang, ignoring
# PG_CXXFLAGS; shardid's functions gain nothing from JIT inlining.
override with_llvm = no

EXTRA_CLEAN = tmp_check results regression.diffs regression.out build

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
