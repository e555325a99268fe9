# shardid: PostgreSQL extension in C++, built with PGXS.
EXTENSION = shardid
MODULE_big = shardid
# The one version truth is shardid.control's default_version; META.json
# (PGXN), debian/changelog and the upgrade scripts carry it too, in SemVer
# form (1.2 -> 1.2.0) where they need one, and test/versions/truth.sh fails
# when they drift apart.
EXTVERSION := $(shell sed -n "s/^default_version *= *'\\(.*\\)'/\\1/p" $(dir $(lastword $(MAKEFILE_LIST)))shardid.control)
DISTVERSION = $(EXTVERSION).0

# The pure core (no PostgreSQL header, no network), the etcd client and the
# PostgreSQL glue. The etcd client's HTTP transport (libcurl) is a library
# of its own, shardid_etcd, that only the coordinator worker loads: no
# backend maps libcurl (src/etcd/transport.hpp).
CORE_OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/core/*.cpp src/core/*/*.cpp)))
TRANSPORT_OBJS = src/etcd/transport.o
ETCD_OBJS = $(filter-out $(TRANSPORT_OBJS),$(patsubst %.cpp,%.o,$(sort $(wildcard src/etcd/*.cpp))))
PG_OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/pg/*.cpp src/pg/*/*.cpp src/pg/*/*/*.cpp)))
OBJS = $(CORE_OBJS) $(ETCD_OBJS) $(PG_OBJS)

DATA = $(wildcard sql/shardid--*.sql)

# pg_regress: sql/<test>.sql against expected/<test>.out, in a throwaway
# instance configured by test/regress/regress.conf.
# `make installcheck REGRESS=nopreload REGRESS_CONF=test/regress/nopreload.conf`
# runs the same checks without shared_preload_libraries.
# The one list of regression tests (scripts/test.sh and the roots read it).
# They share one instance and run in this order, which matters where a test
# reads node-wide state another one changes:
#   counters  expects the instance's first DecimalId generator id and run id
#             (1): it runs before hostile, which takes more of both;
#   upgrade, hostile, catalog_edges  drop the extension (and with it every
#             layout and key the tests before them made) and create it again;
#   rules     makes permanent layouts and keys: last, so no listing of
#             layouts or keys in another test sees them.
REGRESS = trace_id guc layouts bad_input counters eightbyte keys timefilter uuidv7 upgrade hostile catalog_edges sharding rules lineage
REGRESS_CONF ?= test/regress/regress.conf
REGRESS_OPTS = --temp-instance=tmp_check --temp-config=$(REGRESS_CONF)

PG_CONFIG ?= pg_config
# A PG_CONFIG that does not run is an error, not an empty build.
ifeq ($(shell $(PG_CONFIG) --version 2>/dev/null),)
$(error $(PG_CONFIG) does not run: set PG_CONFIG to the pg_config of the PostgreSQL to build for)
endif
PG_CPPFLAGS = -I$(srcdir)/src -isystem $(includedir_server)
# SHARDID_CXXFLAGS (from the environment or make's command line): flags
# appended last, such as -g0 (the test command's package builds: debug
# information changes no generated code and takes a quarter of the compile).
PG_CXXFLAGS = -std=c++17 -Wextra -Werror=return-type $(SHARDID_CXXFLAGS)
# PGXS links with $(CC): bring in the C++ runtime.
SHLIB_LINK += -lstdc++
# PGXS would also compile each .cpp to LLVM bitcode with clang, ignoring
# PG_CXXFLAGS; shardid's functions gain nothing from JIT inlining.
override with_llvm = no
# Rebuild objects when a header changes (dependency files in .deps/, named
# by each source's base name: keep those unique across src/core and src/pg).
override autodepend = yes

EXTRA_CLEAN = tmp_check results regression.diffs regression.out build log shardid_etcd$(DLSUFFIX) $(TRANSPORT_OBJS)

PGXS := $(shell $(PG_CONFIG) --pgxs)
# pg_config alone (Debian's libpq-dev) has no PGXS: the server headers are
# missing.
ifeq ($(wildcard $(PGXS)),)
$(error the server headers of $(shell $(PG_CONFIG) --version) are not installed: on Debian and Ubuntu, apt-get install postgresql-server-dev-$(shell $(PG_CONFIG) --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/'))
endif
include $(PGXS)

# The other build dependencies, each with the Debian package that has it: a
# missing one stops the build naming the package, not with a compiler error.
# Not checked for targets that compile nothing.
BUILD_DEPS = curl/curl.h:libcurl4-openssl-dev nlohmann/json.hpp:nlohmann-json3-dev
ifneq ($(filter-out clean distclean maintainer-clean dist,$(or $(MAKECMDGOALS),all)),)
ifeq ($(shell $(CXX) -std=c++17 -x c++ -E - </dev/null >/dev/null 2>&1 && echo ok),)
$(error the C++ compiler $(CXX) does not run or lacks C++17: on Debian and Ubuntu, apt-get install g++)
endif
missing_deps := $(strip $(foreach d,$(BUILD_DEPS),$(if $(shell printf '\043include <%s>\n' $(word 1,$(subst :, ,$(d))) | $(CXX) -std=c++17 -x c++ -E - >/dev/null 2>&1 && echo ok),,$(word 2,$(subst :, ,$(d))))))
ifneq ($(missing_deps),)
$(error build dependencies are missing: on Debian and Ubuntu, apt-get install $(missing_deps))
endif
endif

# shardid_etcd: the etcd transport, linked with libcurl, installed beside
# shardid in $(pkglibdir), loaded by the coordinator worker alone.
TRANSPORT = shardid_etcd$(DLSUFFIX)
all: $(TRANSPORT)
$(TRANSPORT): $(TRANSPORT_OBJS)
	$(CXX) $(CXXFLAGS) $(CFLAGS_SL) $(LDFLAGS) $(LDFLAGS_SL) -shared -o $@ $^ -lcurl
install: install-transport
install-transport: $(TRANSPORT) installdirs
	$(INSTALL_SHLIB) $(TRANSPORT) '$(DESTDIR)$(pkglibdir)/$(TRANSPORT)'
uninstall: uninstall-transport
uninstall-transport:
	rm -f '$(DESTDIR)$(pkglibdir)/$(TRANSPORT)'
.PHONY: install-transport uninstall-transport

# shmem_request_hook and custom WAL resource managers came in PostgreSQL 15.
ifneq ($(filter 8.% 9.% 10 11 12 13 14,$(MAJORVERSION)),)
$(error shardid needs PostgreSQL 15 or later; $(PG_CONFIG) is PostgreSQL $(MAJORVERSION))
endif

# PostgreSQL's TAP framework (PostgreSQL::Test::Cluster): failover and
# replication scenarios on real servers. `make tapcheck`, as a user
# PostgreSQL accepts (not root); scripts/test.sh runs it.
PROVE_TESTS = $(shell awk '$$1 == "tap" {print $$2}' test/suites.list)
PROVE_FLAGS = --verbose
tapcheck:
	$(prove_installcheck)
.PHONY: tapcheck

# The quick loop (build, the structure check, unit tests, pg_regress; about
# 2 minutes): the one command to run after every change.
quick:
	bash scripts/quick.sh
.PHONY: quick

# PGXN distribution: shardid-<version>.zip of the committed tree.
dist:
	@mkdir -p build
	git archive --format zip --prefix=$(EXTENSION)-$(DISTVERSION)/ -o build/$(EXTENSION)-$(DISTVERSION).zip HEAD
	@echo build/$(EXTENSION)-$(DISTVERSION).zip
.PHONY: dist

# --- C++ tests of the pure core (no PostgreSQL needed) ---
CORE_SRCS = $(CORE_OBJS:.o=.cpp)
# The suites' files come from test/suites.list, the one list of them.
suite_files = $(wildcard $(shell awk '$$1 == "$(1)" {print $$2}' $(srcdir)/test/suites.list))
UNIT_SRCS = $(call suite_files,unit)
# No debug information in the plain build (GoogleTest names file and line
# itself); line tables in the sanitizers' (-g1: their reports name lines).
# The full -g cost the test command a third more compiling.
TEST_CXXFLAGS = -std=c++17 -O2 -Wall -Wextra -Werror -I$(srcdir)/src -pthread

# Each file compiled once into its own object (make -j runs them side by
# side, a change recompiles only what it touches): the plain tests link the
# core objects the extension is built from, and build/unit/ holds the
# tests' own; the sanitizers' build compiles both again, instrumented, in
# build/san/. Header dependencies in the .d files beside the objects.
SAN_CXXFLAGS = -O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
UNIT_OBJS = $(patsubst test/unit/%.cpp,build/unit/%.o,$(UNIT_SRCS))
SAN_OBJS = $(patsubst %.cpp,build/san/%.o,$(CORE_SRCS) $(UNIT_SRCS))
build/unit/%.o: test/unit/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -MMD -MP -c -o $@ $<
build/san/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) $(SAN_CXXFLAGS) -MMD -MP -c -o $@ $<
-include $(UNIT_OBJS:.o=.d) $(SAN_OBJS:.o=.d)

# The core's objects as the extension has them, checked for warnings the
# way the tests' own are (-Wall -Wextra -Werror) by the sanitizers' build.
build/unit_tests: $(CORE_OBJS) $(UNIT_OBJS)
	$(CXX) $(TEST_CXXFLAGS) -o $@ $^ -lgtest -lgtest_main

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer.
build/unit_tests_san: $(SAN_OBJS)
	$(CXX) $(TEST_CXXFLAGS) $(SAN_CXXFLAGS) -o $@ $^ -lgtest -lgtest_main

unit: build/unit_tests build/unit_tests_san
.PHONY: unit

# --- integration tests against real servers (libpqxx 6) ---
build/integration_tests: $(call suite_files,integration)
	@mkdir -p build
	$(CXX) -std=c++20 -O2 -g -Wall -Wextra -Werror -pthread -o $@ $^ -lpqxx -lpq

# --- libFuzzer over the core (clang, with ASan and UBSan) ---
build/core_fuzz: $(CORE_SRCS) $(call suite_files,fuzz) $(wildcard src/core/*.hpp src/core/*/*.hpp)
	@mkdir -p build
	clang++ -std=c++17 -O1 -g -I$(srcdir)/src -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-o $@ $(CORE_SRCS) $(call suite_files,fuzz)

# FUZZ_SECONDS bounds the run in the test suite.
FUZZ_SECONDS ?= 20
fuzz: build/core_fuzz
	@mkdir -p build/fuzz-corpus
	build/core_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=build/ build/fuzz-corpus
.PHONY: fuzz

# --- Google Benchmark over the core ---
build/engine_bench: $(CORE_OBJS) bench/engine_bench.cpp
	@mkdir -p build
	$(CXX) -std=c++17 -O2 -g -Wall -Wextra -Werror -I$(srcdir)/src -pthread -o $@ $(CORE_OBJS) bench/engine_bench.cpp \
		-lbenchmark -lpthread
