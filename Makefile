# kbv — the two commands the README puts first:
#   make run    install what is missing, build, run the main job on the HCA model
#   make test   install what is missing, build, run every test (then again under ASan+UBSan)
# Works as root on a fresh Debian 12 machine (apt-get, non-interactive).

SHELL := /bin/bash
BUILD ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
BUILD_TSAN ?= build-tsan
BUILD_DEB ?= build-deb
BUILD_ARM ?= build-aarch64
JOBS ?= $(shell nproc)
MESON_OPTS ?= -Dwerror=true

# Debian packages kbv builds with (see README "Dependencies").
DEB_PKGS := meson ninja-build pkg-config g++ clang libclang-rt-14-dev clang-format \
            libibverbs-dev libnuma-dev libgtest-dev libgmock-dev libbenchmark-dev \
            libcli11-dev libfmt-dev nlohmann-json3-dev libdpdk-dev gnuplot-nox libpcap-dev libisal-dev tshark ibverbs-utils \
            perftest cmake help2man groff-base \
            ucx-utils libucx0 openmpi-bin libopenmpi-dev libibverbs1 ibverbs-providers python3

.PHONY: all deps build install run test test-unit test-asan test-tsan test-fuzz fuzz-long test-stress deb test-deb deps-aarch64 test-aarch64 format format-check bench clean

all: build

# Install only what is missing; `apt-get update` first, as a fresh image needs.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install:$$missing" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS)

# meson install of $(BUILD) (prefix /usr/local unless set at meson setup);
# make install DESTDIR=/abs/dir stages it there (README "Installing").
install: build
	meson install -C $(BUILD) $(if $(DESTDIR),--destdir $(abspath $(DESTDIR)))

# The main job: kbv-perf server and client as two processes, each with its own
# model HCA, RDMA WRITE latency and bandwidth over a size sweep (2 B .. 1 MiB).
run: build
	@tools/run-main-job.sh $(BUILD)

test: build
	meson test -C $(BUILD) --num-processes $(JOBS) --print-errorlogs --no-rebuild
	$(MAKE) test-asan
	$(MAKE) test-fuzz
	$(MAKE) format-check
	@python3 .ci/test-summary.py $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)

test-unit: build
	meson test -C $(BUILD) --suite unit --print-errorlogs --no-rebuild

$(BUILD_ASAN)/build.ninja:
	meson setup $(BUILD_ASAN) $(MESON_OPTS) -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dbench=disabled -Dbuildtype=debug

# Unit and e2e suites again under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps $(BUILD_ASAN)/build.ninja
	ninja -C $(BUILD_ASAN) -j $(JOBS)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	  meson test -C $(BUILD_ASAN) --suite unit --suite e2e --num-processes $(JOBS) \
	  --print-errorlogs --no-rebuild

# ThreadSanitizer build: clang (its TSan models the atomic fences gcc's
# refuses, -Wtsan); -Werror stays on in the gcc builds, clang's extra
# warnings in test code do not stop this one.
$(BUILD_TSAN)/build.ninja:
	CC=clang CXX=clang++ meson setup $(BUILD_TSAN) -Dwerror=false -Db_sanitize=thread \
	  -Db_lundef=false -Dbench=disabled

# Unit and e2e suites under ThreadSanitizer; a report fails the test.
# Suppressions only with a written reason: tests/tsan.supp.
test-tsan: deps $(BUILD_TSAN)/build.ninja
	ninja -C $(BUILD_TSAN) -j $(JOBS)
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  meson test -C $(BUILD_TSAN) --suite unit --suite e2e --num-processes $(JOBS) \
	  --timeout-multiplier 3 --print-errorlogs --no-rebuild

$(BUILD_FUZZ)/build.ninja:
	CC=clang CXX=clang++ meson setup $(BUILD_FUZZ) $(MESON_OPTS) -Dfuzz=true -Dtests=disabled \
	  -Dbench=disabled -Db_lundef=false

# libFuzzer targets (tests/fuzz), each run for FUZZ_SECONDS.
FUZZ_SECONDS ?= 30
test-fuzz: deps $(BUILD_FUZZ)/build.ninja
	meson configure $(BUILD_FUZZ) -Dfuzz_seconds=$(FUZZ_SECONDS)
	ninja -C $(BUILD_FUZZ) -j $(JOBS) fuzz
	meson test -C $(BUILD_FUZZ) --suite fuzz --num-processes $(JOBS) --print-errorlogs --no-rebuild

# The e2e suites 20 times in a row under a CPU load (not in CI; issue 21):
# tests/stress/run.sh; STRESS_REPEAT, STRESS_LOAD and STRESS_TESTS adjust it.
test-stress: build
	STRESS_REPEAT=$(or $(STRESS_REPEAT),20) tests/stress/run.sh $(BUILD) $(STRESS_TESTS)

# Every fuzz target for FUZZ_SECONDS each (default here 3600):
# make fuzz-long FUZZ_SECONDS=N. Exec counts go to tests/fuzz/README.md.
fuzz-long:
	$(MAKE) test-fuzz FUZZ_SECONDS=$(if $(filter command line environment,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),3600)

# Debian packages (debian/; README "Installing"): dpkg-buildpackage -b -us -uc
# on a copy of the source files (tracked, and new ones git does not ignore)
# in $(BUILD_DEB)/kbv, so libkbv0, libkbv-dev,
# kbv-tools and kbv-ibverbs .debs land in $(BUILD_DEB). A full rebuild of
# several minutes: not part of `make test`.
DEB_PACKAGING_PKGS := debhelper dpkg-dev
deb:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(DEB_PKGS) $(DEB_PACKAGING_PKGS)"
	rm -rf $(BUILD_DEB) && mkdir -p $(BUILD_DEB)/kbv
	git ls-files -z --cached --others --exclude-standard | \
	  tar --null -T - --ignore-failed-read -cf - | tar -xf - -C $(BUILD_DEB)/kbv
	cd $(BUILD_DEB)/kbv && DEB_BUILD_OPTIONS="parallel=$(JOBS) nocheck" dpkg-buildpackage -b -us -uc
	@ls -l $(BUILD_DEB)/*.deb

# The .debs unpacked into a scratch root (dpkg -x) and used: kbv-devinfo,
# examples built against libkbv-dev with CMake and pkg-config and run; as
# root with no kbv package installed, also a real dpkg -i (kbv-run
# ibv_devinfo), purged afterwards. tests/package/deb_test.sh.
test-deb: deb
	tests/package/deb_test.sh $(BUILD_DEB)

# ---- aarch64: cross build (cross/aarch64-linux-gnu.ini), tests under qemu-user ----
# The cross toolchain, qemu-user and the arm64 libraries through multiarch
# (dpkg --add-architecture arm64). CLI11 and nlohmann-json are
# architecture-independent headers (DEB_PKGS). Not cross-installed:
# libisal-dev (not multiarch in Debian 12: its arm64 package would replace
# the amd64 one; -Disal=disabled, the model's CRC-32 then uses the Armv8
# CRC32 instructions), libdpdk-dev (-Ddpdk=disabled), libbenchmark-dev
# (-Dbench=disabled), help2man (-Dman=disabled). Not in `make test`:
# README "aarch64" (its cost).
ARM64_DEB_PKGS := g++-aarch64-linux-gnu qemu-user libgtest-dev:arm64 libgmock-dev:arm64 \
                  libibverbs-dev:arm64 libnuma-dev:arm64 libfmt-dev:arm64 libpcap-dev:arm64
deps-aarch64:
	@missing=""; for p in $(ARM64_DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install:$$missing" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(BUILD_ARM)/build.ninja:
	meson setup $(BUILD_ARM) --cross-file cross/aarch64-linux-gnu.ini $(MESON_OPTS) \
	  -Disal=disabled -Ddpdk=disabled -Dbench=disabled -Dman=disabled

# The e2e tests that run under qemu-user: the driver, verbs, NT and CI
# interfaces, kbv's libibverbs and the lab API on model HCAs, in one process
# or two (a peer started behind MESON_EXE_WRAPPER, tests/e2e/exe_wrapper.hpp),
# and rdma-core's own arm64 libmlx5 on the model. Not here: the tests that
# start Debian's x86-64 programs (ibverbs-utils, perftest, UCX, Open MPI,
# Python) against kbv's arm64 libraries, which cannot load them, and the
# tests of kbv's tools through Python (tools_*, faults_env_*, example_*).
ARM_E2E_TESTS ?= hca_on_model hca_objects_on_model dp_two_process dp_model verbs_on_model \
                 nt_on_model ci_on_model verbs_data_on_model backends_on_model \
                 verbs_two_process wrap_two_process keys_two_process verbs_oom \
                 preload_libnuma_no_devices preload_libnuma mlx5_vfio_on_model \
                 ibverbs_core ibverbs_fast_on_model lab_api_on_model lab_tool_on_model
ARM_TIMEOUT_MULTIPLIER ?= 5
# Builds what the tests need (meson test builds each test's targets; the
# model's libkbv-sim.so, which libkbv.so loads at run time, explicitly) and
# runs the unit suite and ARM_E2E_TESTS under qemu-aarch64.
test-aarch64: deps deps-aarch64 $(BUILD_ARM)/build.ninja
	ninja -C $(BUILD_ARM) -j $(JOBS) libkbv-sim.so.$(shell sed -n "s/^  version : '\(.*\)',/\1/p" meson.build)
	meson test -C $(BUILD_ARM) --suite unit --num-processes $(JOBS) \
	  --timeout-multiplier $(ARM_TIMEOUT_MULTIPLIER) --print-errorlogs
	meson test -C $(BUILD_ARM) $(ARM_E2E_TESTS) --num-processes $(JOBS) \
	  --timeout-multiplier $(ARM_TIMEOUT_MULTIPLIER) --print-errorlogs

bench: build
	$(BUILD)/bench/kbv-bench
	$(BUILD)/bench/kbv-bench-dp
	$(BUILD)/bench/kbv-bench-sync
	$(BUILD)/bench/kbv-bench-qp-memory
	$(BUILD)/bench/kbv-bench-ibverbs
	python3 bench/mpi_pingpong_vs_kbv_perf.py $(BUILD)
	python3 bench/ibverbs_write_lat.py $(BUILD)

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cpp' '*.hpp' 2>/dev/null)

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format-check: ok"

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ) $(BUILD_DEB) $(BUILD_ARM)
