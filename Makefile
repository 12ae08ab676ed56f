# Two commands do everything on a fresh clone:
#   make run    set up .venv and run the main job
#   make test   set up .venv and run lint, import contracts, strict type checks, the docs build and the tests
# While developing: make quick (lint, types and every test not marked slow, well under a minute)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test quick lint typecheck docs unit guard bench browser clean

# llama-cpp-python compiles llama.cpp from source (the registry has no binary wheel that fits
# this glibc): tools/setup_venv.py builds it (lean, on every core) while everything else installs
$(STAMP): pyproject.toml tools/setup_venv.py tools/llama-lean.cmake
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python tools/setup_venv.py
	touch $(STAMP)

# the main job: the ladder on the embedded model (SmolLM2 via llama.cpp), its replies constrained
# to a booking line or a decline, compiled by the brief parser and matched by the embedding
# matcher; then every table, the figures and the HTML report (about 3 minutes on 2 cores)
RUN_DIR ?= runs/main
run: $(STAMP)
	$(BIN)/taskgate ladder --agent llm:constrained --compiler parser --matcher embedding \
	  --episodes 3 --out $(RUN_DIR)
	$(BIN)/taskgate report $(RUN_DIR) --figures $(RUN_DIR)/figures --html $(RUN_DIR)/report.html

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/ruff format --check src tests bench tools
	$(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy

# the docs site (mkdocs-material, the API reference by mkdocstrings) into .site/, warnings fatal
# (no --quiet: it hides the warnings that --strict counts, and the build then passes)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d .site

# every test, slow ones included, on two workers (our machines have two cores)
unit: $(STAMP) browser
	$(BIN)/pytest -n 2

# the HTML report's test renders the page in a real headless Chromium: the Debian package,
# installed here when missing (as root, with apt); without it that test skips and says why
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (Debian package) for the HTML report's browser test"; \
	    apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } || \
	    echo "could not install chromium: the HTML report's browser test will skip"; \
	  else echo "chromium is missing (not root or no apt-get): the HTML report's browser test will skip"; fi; }

# the runner's CPU per turn against a fake server in another process: fails on a regression
guard: $(STAMP)
	$(BIN)/python bench/bench_runner.py 0.05 --check

test: lint typecheck docs unit guard

quick: lint typecheck
	$(BIN)/pytest -m "not slow" -n auto

bench: $(STAMP)
	$(BIN)/python bench/bench_import.py
	$(BIN)/python bench/bench_core.py
	$(BIN)/python bench/bench_parser.py
	$(BIN)/python bench/bench_testbed.py
	$(BIN)/python bench/bench_runner.py
	$(BIN)/python bench/bench_tau2.py
	$(BIN)/python bench/bench_harness.py
	$(BIN)/python bench/bench_proxy.py
	$(BIN)/python bench/bench_mcp.py
	$(BIN)/python bench/mcp_requests.py
	$(BIN)/python bench/bench_matcher.py
	$(BIN)/python bench/bench_conversations.py
	$(BIN)/python bench/bench_llm_style.py
	$(BIN)/python bench/bench_report.py
	$(BIN)/python bench/bench_memory.py
	$(BIN)/python bench/bench_probe.py
	$(BIN)/python bench/bench_pmbench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .site
