# cpuzombie — build, test, bench, fuzz, install.
#   make            build/cpuzombie (everything: agent, libcurl, libsystemd) and
#                   build/cpuzombie-check (-static-pie: checks, report, ena-diff, config check)
#   make run        build, then report on this node with the embedded default config
#   make test       install what the tests need (as root), build the real control plane the
#                   Kubernetes tests run on (tests/tools/kube: once per machine and version,
#                   cached in /var/cache/cpuzombie/kube), then unit + e2e, plain and ASan+UBSan
#                   on input, and fuzz smoke, in stages (tests/tools/stages.py)
#   make check      the inner loop: build checks, unit, one fast e2e test per room
#   make test-kube  KUBE_VERSION=v1.34.4: only the Kubernetes e2e tests, on that Kubernetes
#   make bench      tests/bench: measured tables (ratios against naive alternatives)
#   make bench-kubelet  a real kubelet's CPU over 0, 10k, 50k dying memcgs (docs/cost.md)
#   make soak       SOAK_MINUTES=60: the agent under scripted incidents and API faults (tests/bench/soak.py)
#   make soak-vm    the kernel-log flood in a qemu VM (tests/bench/soak_vm.py)
#   make fuzz       every libFuzzer target for FUZZ_TIME seconds (default 300)
#   make install    PREFIX=/usr/local DESTDIR=
#   V=1             print whole command lines instead of "CC plugin/memcg/memcg.c"

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

# The zombie census (agent/census_bpf.c): a CO-RE BPF program compiled with clang -target bpf
# against a vmlinux.h dumped from this kernel's BTF, embedded as a bpftool skeleton; libbpf is
# linked by the agent only (check-layers proves the check binary references none of it). Built
# when bpftool, clang, libbpf and /sys/kernel/btf/vmlinux are all there (make test installs
# them; make run's build list does not: clang is heavy); otherwise the agent is built without
# it, and with memcg.census_interval on it publishes "built without the BPF census" instead.
BPFTOOL ?= $(firstword $(shell command -v bpftool 2>/dev/null) $(wildcard /usr/sbin/bpftool))
BPF_CLANG ?= clang
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
CENSUS_BPF := $(if $(and $(BPFTOOL),$(wildcard $(VMLINUX_BTF)),$(shell command -v \
	$(BPF_CLANG) 2>/dev/null),$(shell pkg-config --exists libbpf && echo y)),1,0)
# CENSUS=required (the image build): stop here, naming what is missing, rather than build an
# agent without the census.
ifeq ($(CENSUS_BPF)/$(CENSUS),0/required)
$(error CENSUS=required, but the census cannot be built; missing:$(if $(BPFTOOL),, [bpftool])$(if \
	$(shell command -v $(BPF_CLANG) 2>/dev/null),, [$(BPF_CLANG)])$(if $(shell pkg-config \
	--exists libbpf && echo y),, [libbpf: pkg-config libbpf])$(if $(wildcard $(VMLINUX_BTF)),, \
	[kernel BTF at $(VMLINUX_BTF): set VMLINUX_BTF=FILE]))
endif
ifeq ($(CENSUS_BPF),1)
LIBS_BPF := -lbpf
else
LIBS_BPF :=
endif

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes -Wvla \
	-Wwrite-strings -Wno-unused-parameter -Werror
HARDEN := -fPIE -fstack-protector-strong -fstack-clash-protection -fcf-protection \
	-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2
CFLAGS ?= -O2 -g -ffunction-sections -fdata-sections
CZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) $(HARDEN) $(SANFLAGS) -DCZ_VERSION='"$(VERSION)"' -Iplugin
# Two binaries from one set of objects. cpuzombie links libcurl (kube/) and libsystemd
# (host/systemd.c, the agent's journal and sd_notify) directly. cpuzombie-check is what NPD
# execs every interval on every node: the offline subcommands only, linked -static-pie (no
# loader, no shared objects: the cheapest start-up, and one file to copy into NPD's
# container). tests/tools/check-layers.sh proves its objects reference no libcurl, libsystemd
# or dlopen. ASan cannot be linked statically: under SANITIZE=1 it is a dynamic PIE.
LDFLAGS_CZ := -Wl,-z,relro,-z,now -Wl,-z,noexecstack -Wl,--gc-sections -Wl,-O1 $(SANFLAGS)
LIBS_STATIC := -Wl,-Bstatic -ljson-c -lyaml -Wl,-Bdynamic
# --as-needed: a library is recorded only when the code calls into it (also under ASan, whose
# link turns it off).
LIBS := $(LIBS_STATIC) -Wl,--as-needed -lcurl -lsystemd $(LIBS_BPF) -Wl,--no-as-needed -lm
ifeq ($(SANITIZE),1)
LDFLAGS_CHECK := -pie $(LDFLAGS_CZ)
LIBS_CHECK := $(LIBS_STATIC) -lm
else
LDFLAGS_CHECK := -static-pie $(LDFLAGS_CZ)
LIBS_CHECK := -ljson-c -lyaml -lm
endif

SRCS := $(sort $(wildcard plugin/*/*.c))
OBJS := $(SRCS:plugin/%.c=$(B)/obj/%.o)
LIB_OBJS := $(filter-out $(B)/obj/cmd/main.o,$(OBJS))
HDRS := $(wildcard plugin/*/*.h)
# The two binaries' object sets follow the rooms of plugin/ (tests/tools/check-layers.sh proves
# the check binary links no object of an online room and no libcurl, libsystemd or libbpf).
# The offline rooms: everything the static check binary links. The online rooms: the agent, the
# remediator, the Kubernetes transport (the only libcurl user) and the fleet view. In cmd/ (one
# file per subcommand) the check binary takes only the offline subcommands; host/systemd.c is
# host/'s one libsystemd file (its pure half, systemd_restarts.c, stays offline).
CHECK_ROOMS := base host check condition klog cpu memcg ena node view
ONLINE_ROOMS := kube remediator agent fleet
CMD_OFFLINE := check common config ena_diff explain flame report top
CMD_ONLINE := $(filter-out $(CMD_OFFLINE:%=plugin/cmd/cmd_%.c),$(wildcard plugin/cmd/cmd_*.c))
ONLINE_SRCS := $(foreach r,$(ONLINE_ROOMS),$(wildcard plugin/$(r)/*.c)) $(CMD_ONLINE) \
	plugin/host/systemd.c
ONLINE_OBJS := $(ONLINE_SRCS:plugin/%.c=$(B)/obj/%.o)
CHECK_OBJS := $(patsubst plugin/%.c,$(B)/obj/%.o,$(filter-out $(ONLINE_SRCS) plugin/host/systemd.c, \
	$(foreach r,$(CHECK_ROOMS),$(wildcard plugin/$(r)/*.c)) $(CMD_OFFLINE:%=plugin/cmd/cmd_%.c))) \
	$(B)/obj/cmd/main-check.o $(B)/obj/cmd/report_direct-check.o

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)

# Quiet build lines ("CC plugin/memcg/memcg.c"); V=1 prints the whole commands.
ifeq ($(V),1)
Q :=
say = :
else
Q := @
say = printf '  %-4s %s\n'
endif

.PHONY: all run test check unit-bins kube-tools test-unit test-e2e test-asan test-kube deps deps-build image tools \
	control-plane hdr-check check-layers format-check bench bench-kubelet soak soak-vm fuzz fuzz-smoke install \
	clean

all: $(B)/cpuzombie $(B)/cpuzombie-check

# -MMD writes each object's own header list (.d, included at the end): an object is rebuilt
# when a header it includes changes, not when any header does.
$(B)/obj/%.o: plugin/%.c
	@mkdir -p $(@D)
	@$(say) CC $<
	$(Q)$(CC) $(CZ_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# The census: vmlinux.h from this kernel's BTF, the BPF object, its skeleton (build/bpf/).
$(B)/bpf/vmlinux.h:
	@mkdir -p $(@D)
	@$(say) GEN $@
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c >$@.tmp && mv $@.tmp $@

$(B)/bpf/census.bpf.o: plugin/agent/bpf/census.bpf.c plugin/agent/census_rec.h $(B)/bpf/vmlinux.h
	@$(say) BPF $<
	$(Q)$(BPF_CLANG) -target bpf -g -O2 -Wall -Werror -D__TARGET_ARCH_x86 -I$(B)/bpf -Iplugin \
		-c -o $@ $<

# The skeleton embeds the object linked by libbpf's static linker (bpftool gen object): the
# same program and BTF without clang's DWARF (18 KiB embedded in the agent instead of 620).
$(B)/bpf/census.skel.h: $(B)/bpf/census.bpf.o
	@$(say) GEN $@
	$(Q)$(BPFTOOL) gen object $(B)/bpf/census.linked.o $< && \
		$(BPFTOOL) gen skeleton $(B)/bpf/census.linked.o name census_bpf >$@.tmp && mv $@.tmp $@

ifeq ($(CENSUS_BPF),1)
$(B)/obj/agent/census_bpf.o: CZ_CFLAGS += -DCZ_CENSUS_BPF -I$(B)/bpf
$(B)/obj/agent/census_bpf.o: $(B)/bpf/census.skel.h
endif

# main.c and report_direct.c once more for the check binary: the online subcommands answer with
# a one-line error, and `report` asks neither BPF nor systemd itself.
$(B)/obj/cmd/%-check.o: plugin/cmd/%.c
	@mkdir -p $(@D)
	@$(say) CC "$< (check binary)"
	$(Q)$(CC) $(CZ_CFLAGS) $(CFLAGS) -DCZ_CHECK_BINARY -MMD -MP -c -o $@ $<

$(B)/tests:
	@mkdir -p $@

$(B)/cpuzombie: $(OBJS)
	@$(say) LD $@
	$(Q)$(CC) -pie $(LDFLAGS_CZ) -o $@ $(OBJS) $(LIBS)

$(B)/cpuzombie-check: $(CHECK_OBJS)
	@$(say) LD $@
	$(Q)$(CC) $(LDFLAGS_CHECK) -o $@ $(CHECK_OBJS) $(LIBS_CHECK)

$(B)/libcz.a: $(LIB_OBJS)
	@$(say) AR $@
	$(Q)rm -f $@ && ar rcs $@ $(LIB_OBJS)

$(B)/tests/%: tests/unit/%.c $(B)/libcz.a | $(B)/tests
	@$(say) CC $<
	$(Q)$(CC) $(CZ_CFLAGS) $(CFLAGS) -Wno-missing-prototypes -Itests/unit \
		-DFIXTURES='"$(CURDIR)/tests/fixtures"' -MMD -MP -o $@ $< $(B)/libcz.a \
		-pie $(LDFLAGS_CZ) -lcmocka $(LIBS)

# Each header must compile on its own (git's hdr-check).
hdr-check:
	@for h in $(HDRS); do \
		echo '#include "'$${h#plugin/}'"' | $(CC) $(CZ_CFLAGS) -x c -c -o /dev/null - || exit 1; \
	done; echo "hdr-check: $(words $(HDRS)) headers compile alone"

# Includes only go down the layers; the check binary's objects reference no libcurl,
# libsystemd or dlopen (tests/tools/check-layers.sh says what it checks).
# Lines within 100 columns, tabs of 8 (.clang-format); tests/tools/format-check.sh --fix FILE
# reformats just the long lines with clang-format.
format-check:
	@tests/tools/format-check.sh

check-layers: $(B)/cpuzombie-check $(ONLINE_OBJS)
	@CZ_ONLINE_ROOMS="$(ONLINE_ROOMS)" tests/tools/check-layers.sh plugin $(B)/cpuzombie-check \
		$(CHECK_OBJS) -- $(ONLINE_OBJS)

# make run needs only the build's packages; make test adds its own (and the image tests');
# make bench installs its list in tests/bench/run.sh. No install starts or enables a service.
deps-build:
	@tests/tools/install-deps.sh build run

deps:
	@tests/tools/install-deps.sh build test image

tools: deps
	@tests/tools/get-kube-tools.sh
	@$(MAKE) --no-print-directory control-plane

# kube-apiserver, kube-controller-manager, etcd, kwok and node-problem-detector from their Go
# modules at the versions of tests/tools/kube/versions.sh (KUBE_VERSION=... overrides): built
# once per machine and version (the first build says so and how long it took), then cached.
control-plane:
	@tests/tools/kube/build.sh all npd npd-old >/dev/null

# The Kubernetes end-to-end tests alone, on another Kubernetes: make test-kube KUBE_VERSION=v1.34.4
KUBE_TESTS = $(shell grep -l -E '\b(kube|control_plane)\b' tests/e2e/test_*.py | sort)
test-kube: $(B)/cpuzombie $(B)/cpuzombie-check
	@tests/tools/get-kube-tools.sh
	@KUBE_VERSION=$(KUBE_VERSION) tests/tools/kube/build.sh >/dev/null
	@KUBE_VERSION=$(KUBE_VERSION) CZ_BIN=$(CURDIR)/$(B)/cpuzombie CZ_BUILD=$(CURDIR)/$(B) \
		$(PYTHON) -m pytest -q -rs $(KUBE_TESTS)

# The image (manifests/image/Dockerfile) with podman; cached layers between runs.
image:
	@tests/tools/podman/build-image.sh

run: deps-build
	@$(MAKE) -s --no-print-directory say=: all
	@tests/tools/run-node.sh $(B)/cpuzombie

test-unit: $(UNIT_BINS)
	@tests/tools/run-unit.sh $(UNIT_BINS)

test-e2e: $(B)/cpuzombie $(B)/cpuzombie-check
	@CZ_BIN=$(CURDIR)/$(B)/cpuzombie CZ_BUILD=$(CURDIR)/$(B) $(PYTHON) -m pytest -q -rs tests/e2e

# The unit and end-to-end suites on the ASan+UBSan build (build-asan/).
test-asan:
	@$(MAKE) --no-print-directory SANITIZE=1 test-unit test-e2e

# The one test command (CI runs it): deps, then tests/tools/stages.py, which runs every stage
# even when an earlier one failed and closes with one summary line per stage: the control
# plane's build (in the background from the start), the warnings-as-errors build with the
# header, layer and format checks, unit, e2e on the node and on the real control plane, the
# ASan+UBSan build's unit tests and its e2e on input, and a few seconds of every fuzz target.
# CZ_TEST_NOISE=2 runs it all beside two CPU spinners at 40%.
test: deps
	@$(PYTHON) tests/tools/stages.py test

# The inner loop before a commit: the build checks, unit, and one fast e2e test per room
# (tests marked `check` in tests/e2e/conftest.py), a few minutes once the control plane is
# cached (the first make test or make tools builds it).
check: deps
	@$(PYTHON) tests/tools/stages.py check

unit-bins: $(UNIT_BINS)

kube-tools:
	@tests/tools/get-kube-tools.sh

fuzz-smoke:
	@tests/fuzz/run.sh $(FUZZ_TEST_TIME)

fuzz:
	@tests/fuzz/run.sh $(FUZZ_TIME)

bench: deps-build all
	@tests/bench/run.sh $(CURDIR)/build/cpuzombie $(CURDIR)/build/cpuzombie-check

# Not part of make bench or make test (root; builds the real node once per machine, then about
# 10 minutes): the seed's mechanism measured on a real kubelet (docs/cost.md).
bench-kubelet: all
	@$(PYTHON) tests/bench/bench_kubelet_memcg.py $(CURDIR)/build/cpuzombie

# Not part of make test (root, an hour, and a table to read, not an assertion).
soak: all control-plane
	@SOAK_MINUTES=$${SOAK_MINUTES:-60} /usr/bin/python3 tests/bench/soak.py $(CURDIR)/build/cpuzombie

soak-vm: all
	@/usr/bin/python3 tests/bench/soak_vm.py $(CURDIR)/build/cpuzombie

install: $(B)/cpuzombie $(B)/cpuzombie-check
	install -D -m 0755 $(B)/cpuzombie $(DESTDIR)$(PREFIX)/bin/cpuzombie
	install -D -m 0755 $(B)/cpuzombie-check $(DESTDIR)$(PREFIX)/bin/cpuzombie-check
	ln -sf cpuzombie $(DESTDIR)$(PREFIX)/bin/kubectl-cpuzombie  # `kubectl cpuzombie` (fleet)
	install -D -m 0644 config/cpuzombie.yaml $(DESTDIR)/etc/cpuzombie/cpuzombie.yaml
	install -d $(DESTDIR)$(PREFIX)/share/cpuzombie/npd
	install -m 0644 config/npd/*.json $(DESTDIR)$(PREFIX)/share/cpuzombie/npd/
	install -D -m 0644 config/npd-log/cpuzombie-kernel-monitor.json \
		$(DESTDIR)$(PREFIX)/share/cpuzombie/npd-log/cpuzombie-kernel-monitor.json
	install -D -m 0644 config/man/cpuzombie.8 $(DESTDIR)$(PREFIX)/share/man/man8/cpuzombie.8
	install -D -m 0644 config/man/cpuzombie.yaml.5 $(DESTDIR)$(PREFIX)/share/man/man5/cpuzombie.yaml.5
	for u in config/systemd/*; do [ -e "$$u" ] && install -D -m 0644 "$$u" \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/$$(basename $$u); done; true

clean:
	rm -rf build build-asan build-fuzz

-include $(OBJS:.o=.d) $(B)/obj/cmd/main-check.d $(UNIT_BINS:=.d)
