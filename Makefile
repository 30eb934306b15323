# The two quick-start commands: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test fuzz lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	touch $@

# Azurite, the Azure Blob Storage emulator the tests run on loopback (npm; Node 20).
AZURITE := $(VENV)/azurite/node_modules/.bin/azurite-blob
$(AZURITE): | $(BIN)/python
	npm install --silent --no-audit --no-fund --prefix $(VENV)/azurite azurite@3

demo: $(VENV)/.installed
	$(BIN)/lakeseek demo

test: $(VENV)/.installed $(AZURITE)
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/python tools/import_cycles.py src/lakeseek
	$(BIN)/python -m pytest -q --hypothesis-show-statistics

# The generated differential tests and lake histories with new seeds and many more examples (minutes).
FUZZ_EXAMPLES ?= 200
fuzz: $(VENV)/.installed $(AZURITE)
	LAKESEEK_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -q --hypothesis-show-statistics \
		tests/test_differential.py tests/test_damage.py tests/test_histories.py tests/test_text_lakes.py

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/needle.py

clean:
	rm -rf $(VENV) lakeseek-demo benchmarks/data .pytest_cache .hypothesis
