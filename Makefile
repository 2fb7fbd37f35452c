# cpuzombie — build, test, bench, fuzz, install.
#   make            build/cpuzombie
#   make run        build, then report on this node with the embedded default config
#   make test       install what the tests need (as root), then unit + e2e, plain and ASan+UBSan
#   make bench      tests/bench: measured tables (ratios against naive alternatives)
#   make fuzz       every libFuzzer target for FUZZ_TIME seconds (default 300)
#   make install    PREFIX=/usr/local DESTDIR=

VERSION ?= $(shell cat VERSION 2>/dev/null || echo 0.1.0)
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= gcc
PYTHON ?= /usr/bin/python3
FUZZ_TIME ?= 300
FUZZ_TEST_TIME ?= 4

# SANITIZE=1 builds into build-asan/ with ASan+UBSan; everything else is the same.
ifeq ($(SANITIZE),1)
B := build-asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B := build
SANFLAGS :=
endif

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes -Wvla \
	-Wwrite-strings -Wno-unused-parameter -Werror
HARDEN := -fPIE -fstack-protector-strong -fstack-clash-protection -fcf-protection \
	-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2
CFLAGS ?= -O2 -g -ffunction-sections -fdata-sections
CZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) $(HARDEN) $(SANFLAGS) -DCZ_VERSION='"$(VERSION)"' -Iplugin
# json-c and libyaml are linked statically: a check is exec'd by NPD every interval on every node
# and each shared object costs start-up time. libcurl and libsystemd are dlopen()ed only by the
# code paths that use them (kube.c, systemd.c), so a check loads neither.
LDFLAGS_CZ := -pie -Wl,-z,relro,-z,now -Wl,-z,noexecstack -Wl,--gc-sections -Wl,-O1 $(SANFLAGS)
LIBS_STATIC := -Wl,-Bstatic -ljson-c -lyaml -Wl,-Bdynamic
LIBS := $(LIBS_STATIC) -lm -ldl

SRCS := $(sort $(wildcard plugin/*/*.c))
OBJS := $(SRCS:plugin/%.c=$(B)/obj/%.o)
LIB_OBJS := $(filter-out $(B)/obj/cmd/main.o,$(OBJS))
HDRS := $(wildcard plugin/*/*.h)

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)

.PHONY: all run test test-unit test-e2e test-asan deps deps-build image tools hdr-check bench fuzz fuzz-smoke \
	install clean check-format

all: $(B)/cpuzombie

$(B)/obj/%.o: plugin/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CZ_CFLAGS) $(CFLAGS) -MMD -c -o $@ $<

$(B)/tests:
	mkdir -p $@

$(B)/cpuzombie: $(OBJS)
	$(CC) $(LDFLAGS_CZ) -o $@ $(OBJS) $(LIBS) -lcurl

$(B)/libcz.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $(LIB_OBJS)

$(B)/tests/%: tests/unit/%.c $(B)/libcz.a tests/unit/testutil.h | $(B)/tests
	$(CC) $(CZ_CFLAGS) $(CFLAGS) -Wno-missing-prototypes -Itests/unit \
		-DFIXTURES='"$(CURDIR)/tests/fixtures"' -o $@ $< $(B)/libcz.a \
		$(LDFLAGS_CZ) -lcmocka $(LIBS)

# Each header must compile on its own (git's hdr-check).
hdr-check:
	@for h in $(HDRS); do \
		echo '#include "'$${h#plugin/}'"' | $(CC) $(CZ_CFLAGS) -x c -c -o /dev/null - || exit 1; \
	done; echo "hdr-check: $(words $(HDRS)) headers compile alone"

# make run needs only the build's packages; make test adds its own (and the image tests');
# make bench installs its list in tests/bench/run.sh. No install starts or enables a service.
deps-build:
	@tests/tools/install-deps.sh build run

deps:
	@tests/tools/install-deps.sh build test image

tools: deps
	@tests/tools/get-kube-tools.sh

# The image (manifests/image/Dockerfile) with podman; cached layers between runs.
image:
	@tests/tools/podman/build-image.sh

run: deps-build
	@$(MAKE) -s --no-print-directory all
	@tests/tools/run-node.sh $(B)/cpuzombie

test-unit: $(UNIT_BINS)
	@tests/tools/run-unit.sh $(UNIT_BINS)

test-e2e: $(B)/cpuzombie
	@CZ_BIN=$(CURDIR)/$(B)/cpuzombie CZ_BUILD=$(CURDIR)/$(B) $(PYTHON) -m pytest -q -rs tests/e2e

# The one test command: deps, warnings-as-errors build, header check, unit and end-to-end tests,
# then the same suites again under ASan+UBSan, then a few seconds of every fuzz target.
test: deps
	@$(MAKE) --no-print-directory tools
	@$(MAKE) --no-print-directory all hdr-check
	@$(MAKE) --no-print-directory test-unit test-e2e
	@$(MAKE) --no-print-directory SANITIZE=1 test-unit test-e2e
	@$(MAKE) --no-print-directory fuzz-smoke

fuzz-smoke:
	@tests/fuzz/run.sh $(FUZZ_TEST_TIME)

fuzz:
	@tests/fuzz/run.sh $(FUZZ_TIME)

bench: deps-build all
	@tests/bench/run.sh $(CURDIR)/build/cpuzombie

install: $(B)/cpuzombie
	install -D -m 0755 $(B)/cpuzombie $(DESTDIR)$(PREFIX)/bin/cpuzombie
	install -D -m 0644 config/cpuzombie.yaml $(DESTDIR)/etc/cpuzombie/cpuzombie.yaml
	install -d $(DESTDIR)$(PREFIX)/share/cpuzombie/npd
	install -m 0644 config/npd/*.json $(DESTDIR)$(PREFIX)/share/cpuzombie/npd/
	install -D -m 0644 config/man/cpuzombie.8 $(DESTDIR)$(PREFIX)/share/man/man8/cpuzombie.8
	install -D -m 0644 config/man/cpuzombie.yaml.5 $(DESTDIR)$(PREFIX)/share/man/man5/cpuzombie.yaml.5
	for u in config/systemd/*; do [ -e "$$u" ] && install -D -m 0644 "$$u" \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/$$(basename $$u); done; true

clean:
	rm -rf build build-asan build-fuzz

-include $(OBJS:.o=.d)
