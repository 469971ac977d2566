# wattage — one GNU Makefile. Out-of-tree objects under build/ (build/san/ when SANITIZE is set).
#   make            build build/wattage
#   make run        install missing packages, build, run the daemon on its defaults
#   make test       install missing packages (tests too), build with -Werror, run every test
#   make bench      run the benchmarks (see bench/README.md)
#   make SANITIZE=address,undefined test
#   make fuzz       build the libFuzzer harnesses with clang (ASan+UBSan), run each FUZZ_TIME s
VERSION := 0.1.0
PKGS    := sqlite3 libmicrohttpd gnutls yaml-0.1 libcjson zlib libprotobuf-c snappy
# zstd: the store's compressed chunks (src/store/chunk.c)
PKGS    += libzstd
# The facility protocols' libraries (net-snmp, libmodbus, FreeIPMI: IPMI DCMI power readings from
# BMCs): their headers only; the daemon loads each with dlopen when its section has a target
# (src/collect/facility.c), so they are not linked. The test peers written against them link them.
FAC_PKGS := netsnmp libmodbus libfreeipmi
# libcurl: its header only; the parts that speak HTTP out (Redfish, inference targets, carbon
# fetch, notifications, remote write, OTLP, --source) load it with dlopen on use
# (src/core/curl_lib.c). The tests and benches that call libcurl themselves link it.
CURL_LIBS := $(shell pkg-config --libs libcurl 2>/dev/null)
# librdkafka's header (Kafka, serve/kafka.c) when pkg-config finds it; without it the build leaves
# Kafka out. The daemon loads the library with dlopen when a kafka section is configured
# (serve/kafka_lib.c): only the mock peer and the Kafka bench link it.
HAVE_RDKAFKA := $(shell pkg-config --exists rdkafka 2>/dev/null && echo 1)
ifeq ($(HAVE_RDKAFKA),1)
KAFKA_DEF := -DWT_HAVE_KAFKA=1 $(shell pkg-config --cflags rdkafka)
RDKAFKA_LIBS := $(shell pkg-config --libs rdkafka)
endif
CC      ?= gcc
WERROR  ?= 1

ifdef SANITIZE
BUILD   ?= build/san
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
else
BUILD   ?= build
SANFLAGS :=
endif

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla \
        -Wpointer-arith -Wundef -Wwrite-strings -Wno-missing-field-initializers
ifeq ($(WERROR),1)
WARN += -Werror
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) $(FAC_PKGS) libcurl 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
FAC_LIBS   := $(shell pkg-config --libs $(FAC_PKGS) 2>/dev/null)

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -DWT_VERSION=\"$(VERSION)\" $(WARN) -Isrc -I$(BUILD)/gen $(PKG_CFLAGS) $(KAFKA_DEF) \
           -MMD -MP -fstack-protector-strong -D_FORTIFY_SOURCE=2 $(SANFLAGS)
LDFLAGS += -Wl,-z,relro,-z,now $(SANFLAGS)
LDLIBS  += $(PKG_LIBS) -ldl -lpthread -lm

SRC      := $(sort $(shell find src -name '*.c'))
# C generated at build time from the .proto files (protoc-c, Debian protobuf-c-compiler).
PROTO    := $(sort $(shell find src -name '*.proto'))
GEN_SRC  := $(PROTO:src/%.proto=$(BUILD)/gen/%.pb-c.c)
GEN_HDR  := $(GEN_SRC:.c=.h)
OBJ      := $(SRC:%.c=$(BUILD)/%.o) $(GEN_SRC:.c=.o)
LIB_OBJ  := $(filter-out $(BUILD)/src/cli/main.o,$(OBJ))
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TESTS    := $(TEST_SRC:%.c=$(BUILD)/%)
FAKES    := $(BUILD)/tests/fakes/libnvidia-ml.so.1 $(BUILD)/tests/fakes/minimal/libnvidia-ml.so.1 \
            $(BUILD)/tests/fakes/fake_nvml_energy $(BUILD)/tests/fakes/librocm_smi64.so.1 \
            $(BUILD)/tests/fakes/fake_rocm_energy $(BUILD)/tests/fakes/5.2.3/librocm_smi64.so.1 \
            $(BUILD)/tests/fakes/libamd_smi.so $(BUILD)/tests/fakes/nohandles/libamd_smi.so
# Test peers written against the real protocol libraries (a Modbus server...): one program each.
PEER_SRC := $(sort $(wildcard tests/peers/*.c))
ifneq ($(HAVE_RDKAFKA),1)
PEER_SRC := $(filter-out tests/peers/kafka_mock.c,$(PEER_SRC))
endif
PEERS    := $(PEER_SRC:tests/peers/%.c=$(BUILD)/tests/peers/%)

.PHONY: all deps deps-test run test check unit bench clean format check-format tidy valgrind fuzz \
        fuzz-build deb
BENCH    := $(patsubst bench/%.c,$(BUILD)/bench/%,$(sort $(wildcard bench/*.c)))
ifneq ($(HAVE_RDKAFKA),1)
BENCH    := $(filter-out $(BUILD)/bench/kafka_bench,$(BENCH))
endif

# The manual pages, made by the binary from the tables --help is made from and the config
# schema (src/cli/man.c), gzipped as the package installs them.
MAN      := $(BUILD)/man/wattage.1.gz $(BUILD)/man/wattage.yaml.5.gz

all: $(BUILD)/wattage $(MAN) $(FAKES) $(TESTS) $(BENCH) $(PEERS)

$(BUILD)/man/wattage.1.gz: $(BUILD)/wattage
	@mkdir -p $(dir $@)
	$(BUILD)/wattage __man 1 >$@.roff && gzip -9n <$@.roff >$@ && rm -f $@.roff

$(BUILD)/man/wattage.yaml.5.gz: $(BUILD)/wattage deploy/wattage.yaml
	@mkdir -p $(dir $@)
	$(BUILD)/wattage __man 5 deploy/wattage.yaml >$@.roff && gzip -9n <$@.roff >$@ && rm -f $@.roff

$(BUILD)/wattage: $(OBJ)
	$(CC) -pie $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) -fPIE $(CFLAGS) -c -o $@ $<

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: src/%.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=src --c_out=$(BUILD)/gen $<

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c
	$(CC) -fPIE $(CFLAGS) -c -o $@ $<

# Sources that include generated headers: the headers come first.
# The live page's files are embedded in ui.o (.incbin, src/serve/ui.c): rebuild it when they
# change.
$(BUILD)/src/serve/ui.o: $(wildcard src/serve/ui/*)
$(BUILD)/src/serve/remote_write.o $(BUILD)/src/serve/otlp.o: $(GEN_HDR)

$(BUILD)/tests/runner.o: tests/runner.c
	@mkdir -p $(dir $@)
	$(CC) -fPIE $(CFLAGS) -Itests -c -o $@ $<

$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB_OBJ) $(BUILD)/tests/runner.o
	@mkdir -p $(dir $@)
	$(CC) -fPIE $(CFLAGS) -Itests -pie $(LDFLAGS) -o $@ $< $(LIB_OBJ) $(BUILD)/tests/runner.o $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -fPIE $(CFLAGS) -pie $(LDFLAGS) -o $@ $< $(LIB_OBJ) $(LDLIBS)

$(BUILD)/tests/peers/kafka_mock $(BUILD)/bench/kafka_bench: LDLIBS += $(RDKAFKA_LIBS)
$(BUILD)/tests/unit/test_notify_am $(BUILD)/bench/fleet_feed: LDLIBS += $(CURL_LIBS)

$(BUILD)/tests/peers/%: tests/peers/%.c
	@mkdir -p $(dir $@)
	$(CC) -fPIE $(CFLAGS) -pie $(LDFLAGS) -o $@ $< $(LDLIBS) $(FAC_LIBS)

# The fake NVML is a real shared object found through the same dlopen path as the driver's.
$(BUILD)/tests/fakes/libnvidia-ml.so.1: tests/fakes/fake_nvml.c src/collect/nvml_api.h
	@mkdir -p $(dir $@)
	$(CC) -fPIC -shared $(CFLAGS) -Wl,-soname,libnvidia-ml.so.1 -Wl,-z,nodelete -o $@ $< -lm

# The same fake with only the required entry points, under their oldest names.
$(BUILD)/tests/fakes/minimal/libnvidia-ml.so.1: tests/fakes/fake_nvml.c src/collect/nvml_api.h
	@mkdir -p $(dir $@)
	$(CC) -fPIC -shared $(CFLAGS) -DFAKE_MINIMAL -Wl,-soname,libnvidia-ml.so.1 -Wl,-z,nodelete -o $@ $< -lm

# fake_nvml_energy GPU FROM TO: the fake's exact energy over a window, for shell tests.
$(BUILD)/tests/fakes/fake_nvml_energy: tests/fakes/fake_nvml.c src/collect/nvml_api.h
	@mkdir -p $(dir $@)
	$(CC) -fPIE -pie $(CFLAGS) -DFAKE_NVML_TOOL -o $@ $< -lm

# The fake ROCm SMI, found through the AMD collector's dlopen path like the fake NVML.
$(BUILD)/tests/fakes/librocm_smi64.so.1: tests/fakes/fake_rocm_smi.c src/collect/rocm_api.h
	@mkdir -p $(dir $@)
	$(CC) -fPIC -shared $(CFLAGS) -Wl,-soname,librocm_smi64.so.1 -Wl,-z,nodelete -o $@ $< -lm

# The same fake as Debian 12's 5.2.3: without rsmi_dev_current_socket_power_get.
$(BUILD)/tests/fakes/5.2.3/librocm_smi64.so.1: tests/fakes/fake_rocm_smi.c src/collect/rocm_api.h
	@mkdir -p $(dir $@)
	$(CC) -fPIC -shared $(CFLAGS) -DFAKE_RSMI_523 -Wl,-soname,librocm_smi64.so.1 -Wl,-z,nodelete -o $@ $< -lm

# The fake AMD SMI: AMD SMI's exports over the fake ROCm SMI's physics, whose symbols it hides.
AMDSMI_FAKE_SRC := tests/fakes/fake_amd_smi.c tests/fakes/fake_rocm_smi.c
$(BUILD)/tests/fakes/libamd_smi.so: $(AMDSMI_FAKE_SRC) src/collect/amdsmi_api.h src/collect/rocm_api.h
	@mkdir -p $(dir $@)
	$(CC) -fPIC -shared -fvisibility=hidden $(CFLAGS) -Wl,-soname,libamd_smi.so -Wl,-z,nodelete -o $@ $(AMDSMI_FAKE_SRC) -lm

# The same without amdsmi_get_processor_handles: a library wattage cannot use.
$(BUILD)/tests/fakes/nohandles/libamd_smi.so: $(AMDSMI_FAKE_SRC) src/collect/amdsmi_api.h src/collect/rocm_api.h
	@mkdir -p $(dir $@)
	$(CC) -fPIC -shared -fvisibility=hidden $(CFLAGS) -DFAKE_AMDSMI_NO_HANDLES -Wl,-soname,libamd_smi.so -Wl,-z,nodelete -o $@ $(AMDSMI_FAKE_SRC) -lm

# fake_rocm_energy DEV FROM TO: the fake's exact energy over a window, for shell tests.
$(BUILD)/tests/fakes/fake_rocm_energy: tests/fakes/fake_rocm_smi.c src/collect/rocm_api.h
	@mkdir -p $(dir $@)
	$(CC) -fPIE -pie $(CFLAGS) -DFAKE_ROCM_TOOL -o $@ $< -lm

deps:
	@./scripts/deps.sh

deps-test:
	@./scripts/deps.sh --test

run: deps
	@$(MAKE) --no-print-directory $(BUILD)/wattage
	$(BUILD)/wattage run

unit: all
	@./tests/run.sh $(BUILD)

test: deps-test
	@$(MAKE) --no-print-directory all
	@./tests/run.sh $(BUILD)

# The quick tier for the inner loop: the unit tests and the CLI suites that are not slow (the
# list in tests/run.sh), side by side.
check: deps-test
	@$(MAKE) --no-print-directory all
	@WATTAGE_TEST_QUICK=1 ./tests/run.sh $(BUILD)

bench: deps-test
	@$(MAKE) --no-print-directory all
	@./bench/run.sh $(BUILD)

valgrind: all
	@WATTAGE_VALGRIND=1 ./tests/run.sh $(BUILD)

# The libFuzzer harnesses (tests/fuzz/fuzz_*.c), one per parser, with everything under clang's
# -fsanitize=fuzzer-no-link,address,undefined in build/fuzz/. Not part of `all`: a machine
# without clang still builds, and -Werror stays gcc's (a warning only clang has must not stop
# the fuzzing). `make fuzz` runs the regression inputs (tests/fuzz/regress/NAME/)
# and then each harness for FUZZ_TIME seconds from its seed corpus (tests/fuzz/seeds.sh).
FUZZ_SRC   := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BUILD := build/fuzz
FUZZ_BINS  := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/tests/fuzz/%)
FUZZ_TIME  ?= 60
FUZZ_CC    ?= clang

fuzz-build:
	@$(MAKE) --no-print-directory CC=$(FUZZ_CC) BUILD=$(FUZZ_BUILD) WERROR=0 \
	    SANITIZE=fuzzer-no-link,address,undefined $(FUZZ_BINS)

fuzz: deps-test
	@$(MAKE) --no-print-directory fuzz-build
	@./tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_TIME)

$(FUZZ_BUILD)/tests/fuzz/%: tests/fuzz/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -fPIE $(CFLAGS) -Itests/fuzz -fsanitize=fuzzer -pie $(LDFLAGS) -o $@ $< $(LIB_OBJ) \
	    $(LDLIBS)

FORMAT_SRC = $(SRC) $(shell find src tests -name '*.h') $(TEST_SRC) $(wildcard tests/fuzz/*.c)

format:
	clang-format -i $(FORMAT_SRC) tests/runner.c tests/fakes/*.c

check-format:
	clang-format --dry-run -Werror $(FORMAT_SRC)

tidy:
	clang-tidy $(SRC) -- $(CFLAGS)

# The Debian package (dpkg-deb, no debian/ source tree): scripts/deb.sh, files from deploy/.
deb: $(BUILD)/wattage $(MAN)
	@./scripts/deb.sh $(BUILD) $(VERSION)

clean:
	rm -rf build

-include $(OBJ:.o=.d) $(TESTS:=.d) $(PEERS:=.d) $(BENCH:=.d) $(FUZZ_BINS:=.d)

# The DCMI module for OpenIPMI's BMC simulator (ipmi_sim's loadlib; tests/cli/test_ipmi.sh),
# built when its headers are installed (Debian libopenipmi-dev, a test package).
ifneq ($(wildcard /usr/include/OpenIPMI/mcserv.h),)
all: $(BUILD)/tests/peers/ipmi_sim/dcmi_power.so
endif
# Never sanitized: it is loaded into ipmi_sim, which is not (ASan must come first in a process).
$(BUILD)/tests/peers/ipmi_sim/dcmi_power.so: tests/peers/ipmi_sim/dcmi_power.c
	@mkdir -p $(dir $@)
	$(CC) -fPIC -shared $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS)) -o $@ $<
