# Two entry points: `make demo` (the main job) and `make test` (the tests). Each creates or reuses
# .venv and installs what it needs (and Debian's etcd when the etcd binary is missing, its JDK
# when javac is, buildah and mmdebstrap for the image test), so a fresh machine needs only
# Python 3.11 and Java 17.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: test test-fast demo lint typecheck bench bench-quick soak clean etcd jdk chromium image-tools \
	lab-tools alluxiofs-venvs protos azurite

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[worker,dev,spark]'
	touch $(STAMP)

# The cluster tests and the two-worker demo run a real etcd: Debian's etcd-server (3.4).
etcd:
	@command -v etcd >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; }

# The many-host lab (worker/devlab/lab) makes network namespaces and veths with iproute2's ip and cuts
# links between two hosts with iptables; nsenter, unshare and mount come with util-linux.
lab-tools:
	@{ command -v ip && command -v iptables; } >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 iptables >/dev/null; }

# Spark's short-circuit client (worker/spark/java) is compiled on first use against pyspark's
# jars (worker/spark/hadoopjar.py): a machine with a Java 17 runtime alone gets Debian's JDK.
jdk:
	@command -v javac >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; }

# The console's browser tests drive Debian's chromium through Playwright (tests/integration/
# test_console.py): Playwright cannot download a browser here, and needs none.
chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The image test (tests/integration/image/test_image.py) builds the Dockerfile with buildah on a Debian
# base made by mmdebstrap (both cached under ~/.cache/doracache-image), no registry needed.
image-tools:
	@command -v buildah >/dev/null && command -v mmdebstrap >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah mmdebstrap >/dev/null; }

# Azurite, Microsoft's Azure Storage emulator, for the Azure UFS tests (tests/integration/
# test_ufs_azure.py): from npm, with the machine's Node.js, into ~/.cache/doracache-azurite.
AZURITE := $(HOME)/.cache/doracache-azurite
azurite:
	@test -x $(AZURITE)/node_modules/.bin/azurite-blob || npm install --silent --no-audit \
		--no-fund --prefix $(AZURITE) azurite@3 >/dev/null

# alluxiofs versions the Alluxio-compatibility tests run that cannot share .venv (1.0.17, 1.1.17),
# each in .venv-alluxiofs/<version>; the tests build them on first use too, but slowly.
alluxiofs-venvs: $(STAMP)
	$(BIN)/python -m tests.integration.clients.alluxiofs_support

# The SeaweedFS filer's protocol (the part the change feed uses), generated code committed:
# regenerate after editing worker/feeds/filer_pb/seaweedfs_filer.proto.
protos: $(STAMP)
	cd worker/feeds/filer_pb && $(abspath $(BIN))/python -m grpc_tools.protoc -I. \
		--python_out=. --pyi_out=. seaweedfs_filer.proto

# lint-imports: the import contracts in pyproject.toml ([tool.importlinter]): the client and the
# package it shares with the worker import no server code.
lint: $(STAMP)
	$(BIN)/ruff check config ufs pagestore worker tests bench
	$(BIN)/ruff format --check config ufs pagestore worker tests bench
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# Three test processes (most tests wait on servers and subprocesses, not on the 2 CPUs); the
# reliability scenarios after them, alone, since they load the machine on purpose.
test: etcd jdk chromium image-tools lab-tools azurite alluxiofs-venvs lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 3 --durations=25 -m "not reliability"
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=10 -m reliability

# Unit tests only: no real servers (integration), no reliability scenarios, nothing slow.
test-fast: jdk lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 3 -m "not integration and not reliability and not slow"

# `make demo DEMO_ARGS="--workers 2"` also runs two workers as one cache through etcd;
# DEMO_ARGS="--hosts 3" runs the pipeline on Spark standalone across three emulated hosts.
demo: etcd jdk lab-tools $(STAMP)
	$(BIN)/dora demo $(DEMO_ARGS)

# Figures to stdout; the side-by-side suite writes bench/results/*.json and renders
# bench/RESULTS.md and bench/results/plots from it. bench-quick: small sizes, 0 ms, a few minutes.
# BENCH_ARGS go to python -m bench.side, e.g. BENCH_ARGS="--profile seq-read:dora --label ...".
bench: etcd jdk $(STAMP)
	$(BIN)/python -m bench.run_all $(BENCH_ARGS)

bench-quick: jdk $(STAMP)
	$(BIN)/python -m bench.run_all --quick $(BENCH_ARGS)

# The long versions of the reliability scenarios (see RELIABILITY.md); figures at the end.
soak: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -o timeout=3600 -m reliability --soak tests/reliability

clean:
	rm -rf $(VENV) .venv-alluxiofs .mypy_cache .ruff_cache
