# kube-batchd build.
#
#   make                 every binary into bin/, libkube.a into build/<variant>/
#   make deps            install the Debian -dev packages this needs (apt-get, as root)
#   make check           build and run every test; ends with "N passed, N failed"
#   make SANITIZE=address,undefined check
#   make valgrind        the unit tests under valgrind
#   make fuzz            clang + libFuzzer targets, each run for FUZZ_SECONDS
#   make demo            the whole system on the embedded in-memory cluster
#   make image           the OCI image (kube-batchd, tf-operator, kbctl) from Debian's packages
#   make image-check     build it and run it against kb-apiserver with podman
#   make real-k8s        build a real kube-apiserver/scheduler/controller-manager outside the
#                        repository (K8S_DIR); then KB_K8S_BIN=K8S_DIR/bin runs the real-server suites
#   make bench           the benchmarks in bench/, printing figures (installs gnuplot for their plots)
#   make format          clang-format every source file
#   make clean
#
# Objects live in build/<variant>/ so that a sanitizer build never mixes with a plain one;
# the binaries of the last build are copied into bin/.

CC       ?= cc
SANITIZE ?=
WERROR   ?=
JOBS     ?= 2
FUZZ_SECONDS ?= 30

DEB_PKGS := pkg-config libglib2.0-dev libjson-c-dev libcurl4-openssl-dev libmicrohttpd-dev \
            libyaml-dev libgnutls28-dev
# gnutls: the extender verifies client certificates itself (libmicrohttpd only asks for them).
PKGS     := glib-2.0 gio-2.0 gio-unix-2.0 json-c libcurl libmicrohttpd yaml-0.1 gnutls

comma := ,
VARIANT := $(if $(SANITIZE),san-$(subst $(comma),-,$(SANITIZE)),default)
O := build/$(VARIANT)

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
           -Wshadow -Wstrict-prototypes -Wmissing-prototypes -fno-strict-aliasing \
           $(if $(WERROR),-Werror) -I. $(PKG_CFLAGS) -MMD -MP
LDLIBS  += $(PKG_LIBS) -lm -lpthread
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
# The sources that print KB_VERSION, and only they, are compiled with it and rebuilt when it
# changes (a new commit), so that --version names the commit a binary (and the image made of it)
# was built from, not the one of its last full rebuild. Every other object's command line stays
# the same from commit to commit (a compiler cache such as ccache then serves it).
VERSION_STAMP := $(O)/version.stamp
$(shell mkdir -p $(O); [ "$$(cat $(VERSION_STAMP) 2>/dev/null)" = "$(VERSION)" ] || \
  echo "$(VERSION)" >$(VERSION_STAMP))
VERSION_USERS := $(shell grep -l KB_VERSION scheduler/*.c operator/*.c cli/*.c kube/*.c testbed/kubelet/*.c 2>/dev/null)

# ---- sources -------------------------------------------------------------------------------
KUBE_SRC      := $(wildcard kube/*.c)
SCHED_SRC     := $(filter-out scheduler/main.c,$(wildcard scheduler/*.c)) $(wildcard policies/*.c)
OPER_SRC      := $(filter-out operator/main.c,$(wildcard operator/*.c))
APISERVER_SRC := $(filter-out testbed/apiserver/main.c,$(wildcard testbed/apiserver/*.c))
# kb-kubelet's modules live in libapiserver too: kas-kubelet shares their simulation rules.
APISERVER_SRC += $(filter-out testbed/kubelet/main.c,$(wildcard testbed/kubelet/*.c))
CLI_SRC       := $(filter-out cli/main.c,$(wildcard cli/*.c))
TESTLIB_SRC   := $(wildcard tests/lib/*.c)
BENCHLIB_SRC  := $(wildcard bench/lib/*.c)
TEST_SRC      := $(wildcard tests/test-*.c)
FUZZ_SRC      := $(wildcard tests/fuzz/fuzz-*.c)
BENCH_SRC     := $(wildcard bench/bench-*.c)

obj = $(patsubst %.c,$(O)/obj/%.o,$(1))

LIBKUBE      := $(O)/libkube.a
LIBSCHED     := $(O)/libsched.a
LIBOPER      := $(O)/liboperator.a
LIBAPISERVER := $(O)/libapiserver.a
LIBCLI       := $(O)/libcli.a
LIBTEST      := $(O)/libtestlib.a
LIBBENCH     := $(O)/libbench.a
# Link order: users before what they use.
ALL_LIBS := $(LIBTEST) $(LIBBENCH) $(LIBOPER) $(LIBSCHED) $(LIBAPISERVER) $(LIBCLI) $(LIBKUBE)

BINS := $(if $(wildcard scheduler/main.c),$(O)/bin/kube-batchd) \
        $(if $(wildcard operator/main.c),$(O)/bin/tf-operator) \
        $(if $(wildcard testbed/apiserver/main.c),$(O)/bin/kb-apiserver) \
        $(if $(wildcard testbed/kubelet/main.c),$(O)/bin/kb-kubelet) \
        $(if $(wildcard cli/main.c),$(O)/bin/kbctl) \
        $(patsubst bench/%.c,$(O)/bin/%,$(BENCH_SRC))
TESTS := $(patsubst tests/%.c,$(O)/tests/%,$(TEST_SRC)) \
         $(patsubst tests/fuzz/%.c,$(O)/tests/%,$(FUZZ_SRC))

.PHONY: all deps check check-run demo-run valgrind fuzz demo bench format clean image image-deps image-check real-k8s bench-deps bench-run
# Keep the objects of test and bench programs (intermediate to make) so rebuilds stay incremental.
.SECONDARY:
.DEFAULT_GOAL := all

all: $(BINS) $(LIBKUBE)
	@mkdir -p bin
	@$(if $(strip $(BINS)),cp -f $(BINS) bin/,true)

$(O)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(patsubst %.c,$(O)/obj/%.o,$(VERSION_USERS)): $(VERSION_STAMP)
$(patsubst %.c,$(O)/obj/%.o,$(VERSION_USERS)): CFLAGS += -DKB_VERSION='"$(VERSION)"'

define archive
$(1): $(call obj,$(2))
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(eval $(call archive,$(LIBKUBE),$(KUBE_SRC)))
$(eval $(call archive,$(LIBSCHED),$(SCHED_SRC)))
$(eval $(call archive,$(LIBOPER),$(OPER_SRC)))
$(eval $(call archive,$(LIBAPISERVER),$(APISERVER_SRC)))
$(eval $(call archive,$(LIBCLI),$(CLI_SRC)))
$(eval $(call archive,$(LIBTEST),$(TESTLIB_SRC)))
$(eval $(call archive,$(LIBBENCH),$(BENCHLIB_SRC)))

# Libraries are listed twice so that their mutual references resolve whatever the order.
define link
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(filter %.a,$^) $(LDLIBS)
endef

$(O)/bin/kube-batchd: $(call obj,scheduler/main.c) $(LIBSCHED) $(LIBKUBE)
	$(link)
$(O)/bin/tf-operator: $(call obj,operator/main.c) $(LIBOPER) $(LIBSCHED) $(LIBKUBE)
	$(link)
$(O)/bin/kb-apiserver: $(call obj,testbed/apiserver/main.c) $(LIBAPISERVER) $(LIBKUBE)
	$(link)
$(O)/bin/kb-kubelet: $(call obj,testbed/kubelet/main.c) $(LIBAPISERVER) $(LIBKUBE)
	$(link)
$(O)/bin/kbctl: $(call obj,cli/main.c) $(LIBCLI) $(LIBKUBE)
	$(link)
$(O)/bin/bench-%: $(call obj,bench/bench-%.c) $(ALL_LIBS)
	$(link)

$(O)/tests/test-%: $(call obj,tests/test-%.c) $(ALL_LIBS)
	$(link)

# A fuzz target built with gcc links the replay main, which runs every corpus file once.
$(O)/tests/fuzz-%: $(call obj,tests/fuzz/fuzz-%.c) $(call obj,tests/fuzz/replay.c) $(ALL_LIBS)
	$(link)

# check and demo install what is missing first (make deps: apt-get as root, otherwise it prints the
# exact command and stops), then run in a fresh make so that pkg-config sees the new packages.
check: deps
	@$(MAKE) --no-print-directory check-run

check-run: all $(TESTS)
	@KB_BIN_DIR=$(CURDIR)/$(O)/bin KB_SRCDIR=$(CURDIR) JOBS=$(JOBS) \
	  tests/run-tests.sh $(TESTS)

VALGRIND_SUPP := $(wildcard /usr/share/glib-2.0/valgrind/glib.supp)
# Valgrind runs tests 20-50x slower: each gets 30 min instead of run-tests.sh's 5.
valgrind: all $(TESTS)
	@KB_BIN_DIR=$(CURDIR)/$(O)/bin KB_SRCDIR=$(CURDIR) JOBS=$(JOBS) KB_TEST_TIMEOUT=1800 \
	  KB_TEST_WRAPPER="valgrind -q --error-exitcode=99 --max-threads=4000 --leak-check=full \
	    --errors-for-leak-kinds=definite --show-leak-kinds=definite \
	    $(if $(VALGRIND_SUPP),--suppressions=$(VALGRIND_SUPP))" \
	  G_SLICE=always-malloc G_DEBUG=gc-friendly tests/run-tests.sh $(TESTS)

# libFuzzer: clang, one binary per target, seeded from (and growing) a copy of the corpus.
FUZZ_O := build/fuzz
FUZZ_CFLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -I. $(PKG_CFLAGS) -fsanitize=fuzzer,address,undefined
fuzz:
	@command -v clang >/dev/null || { echo "fuzz: clang is not installed (apt-get install clang libclang-rt-14-dev)"; exit 1; }
	@mkdir -p $(FUZZ_O)
	@for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  echo "== $$n"; \
	  extra=; case $$n in fuzz-sched-*) extra="$(SCHED_SRC)";; fuzz-kas-*) extra="$(APISERVER_SRC)";; esac; \
	  clang $(FUZZ_CFLAGS) -o $(FUZZ_O)/$$n $$f $(KUBE_SRC) $$extra $(PKG_LIBS) -lm || exit 1; \
	  mkdir -p $(FUZZ_O)/corpus-$$n; cp -n tests/fuzz/corpus/$${n#fuzz-}/* $(FUZZ_O)/corpus-$$n/ 2>/dev/null; \
	  $(FUZZ_O)/$$n -max_total_time=$(FUZZ_SECONDS) -max_len=65536 $(FUZZ_O)/corpus-$$n || exit 1; \
	done

demo: deps
	@$(MAKE) --no-print-directory demo-run

demo-run: all
	@KB_BIN_DIR=$(CURDIR)/$(O)/bin deploy/demo.sh

# What the benchmarks use beyond the build: gnuplot draws bench-trace --plot's pictures.
BENCH_DEB_PKGS := gnuplot-nox
bench-deps:
	$(call install_debs,bench-deps,$(BENCH_DEB_PKGS))

bench: deps bench-deps
	@$(MAKE) --no-print-directory bench-run

bench-run: all
	@for b in $(patsubst bench/%.c,$(O)/bin/%,$(BENCH_SRC)); do echo "== $$b"; $$b || exit 1; done

format:
	clang-format -i $(shell git ls-files '*.c' '*.h')

clean:
	rm -rf build bin

# install_debs WHAT,PACKAGES: apt-get install what is missing of PACKAGES (as root), or print the
# exact command and stop.
define install_debs
	@missing=$$(for p in $(2); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	  done); \
	$(3) \
	if [ -z "$$missing" ]; then echo "$(1): all installed"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "$(1): installing $$missing"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	else \
	  echo "$(1): missing packages; run: sudo apt-get install -y $$missing"; exit 1; \
	fi
endef

# kubectl (kubernetes-client) and promtool (prometheus: tests/test-deploy-kustomize.c checks the
# monitoring overlay's rules with it) are what the tests run.
deps:
	$(call install_debs,deps,$(DEB_PKGS),command -v kubectl >/dev/null 2>&1 || missing="$$missing kubernetes-client"; command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus";)

# The image: a Debian root from Debian's archive (mmdebstrap), our binaries of the plain build,
# imported by podman; image-check runs it (runc: see tests/image/test-image.sh). openssl makes
# the test's certificates.
IMAGE_DEB_PKGS := mmdebstrap podman runc openssl
image-deps:
	$(call install_debs,image-deps,$(IMAGE_DEB_PKGS))

image: deps image-deps
	@$(MAKE) --no-print-directory SANITIZE= all
	deploy/image/build-image.sh build/default/bin build/image $(VERSION)

image-check: image
	@KB_BIN_DIR=$(CURDIR)/build/default/bin tests/image/test-image.sh

K8S_DIR ?= $(HOME)/.cache/kube-batchd/k8s-1.20.2
real-k8s:
	@tools/real-k8s.sh $(K8S_DIR)

-include $(shell find build/$(VARIANT)/obj -name '*.d' 2>/dev/null)
