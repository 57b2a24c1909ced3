# The two commands of the README: `make run` and `make test`. Both install the
# system packages they need first (launch/install-deps.sh, idempotent).
BUILD ?= build
CONFIG ?= configs/cartpole.yaml
ARGS ?=

.PHONY: deps build run test clean

deps:
	@launch/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j 2

run: build
	$(BUILD)/ferry run $(CONFIG) $(ARGS)

# The tests' BLAS-calling binaries start with the OpenBLAS kernels ferry's roles get
# (`ferry blas`, core/blas_kernels.h).
test: build
	cd $(BUILD) && blas=$$(./ferry blas 2>/dev/null); \
	  if [ -n "$$blas" ]; then export OPENBLAS_CORETYPE=$$blas; fi; \
	  ctest --output-on-failure --timeout 600

clean:
	rm -rf $(BUILD)
