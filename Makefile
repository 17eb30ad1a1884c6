# amp-course: `make lab` opens the course, `make test` runs the course's tests. Both set up .venv first.
# The delivery rig (the presenter view, the workshop hub, gpu-check, the load tests) has its targets in
# delivery/delivery.mk, included at the end: `make present`, `make test-delivery`, `make workshop`, ...
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.amp-course-installed
KERNEL := amp-course
# pytest-xdist: one worker per core, whole files per worker (nbval cells of one notebook must
# share a kernel, so never split a notebook across workers)
XDIST  ?= -n 2 --dist loadfile
# Optional: an extra index for torch, e.g. PyTorch's CPU-only or CUDA wheel index (README.md).
TORCH_INDEX ?=

.PHONY: setup lab docs test unit nbtest browser portability setup-torch test-torch test-install screenshots notebooks bench clean export

setup: $(STAMP)

$(PY):
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "amp-course needs Python >= 3.11, found " + sys.version'
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever the pins or the package metadata change.
$(STAMP): requirements.txt pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	$(PY) -m ipykernel install --user --name $(KERNEL) --display-name "Python (amp-course)" >/dev/null
	$(PY) -c 'import torch, amp_lessons; print("amp-course ready: torch", torch.__version__, "| amp_lessons", amp_lessons.__version__)'
	@touch $(STAMP)

## Open the course in JupyterLab (localhost only, token authentication: Jupyter's defaults).
## As root (containers), Jupyter refuses to start without --allow-root; nothing else is relaxed.
lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root)

## What the docs say of the lesson registry (README's lesson table, the instructors' solutions table and schedule,
## CONTRIBUTING's layout, the package docstring), written from amp_lessons/lessons.py; lesson 00 re-executed (it prints
## the lessons and the schedule). A test fails while they are stale.
docs: setup
	$(PY) scripts/registry_docs.py
	$(PY) scripts/run_notebooks.py notebooks/00_start_here.ipynb

## The course's tests: the package's unit tests (and the instructors' solutions), every lesson executed and compared
## by nbval, and the lessons in JupyterLab in a real browser (Chromium; skipped with a message where Chromium is
## missing). The delivery rig's tests are `make test-delivery` (delivery/delivery.mk).
## Two runs, so that the notebooks' timings are not taken while browsers run beside them; both always
## run, and make fails if either failed.
## `make test LESSON=05`: the edit loop, one lesson's own unit tests (tests/<topic>/), its rows of every promise
## module and its notebook under nbval (tests/lesson_filter.py); no browser.
LESSON ?=
ifneq ($(LESSON),)
test: setup
	AMP_LESSON=$(LESSON) $(PY) -m pytest $(XDIST) -p no:cacheprovider tests notebooks --ignore=tests/browser
else
test: setup
	@status=0; \
	$(PY) -m pytest $(XDIST) tests notebooks --ignore=tests/browser || status=$$?; \
	$(PY) -m pytest $(XDIST) tests/browser || status=$$?; \
	exit $$status
endif

unit: setup
	$(PY) -m pytest $(XDIST) tests --ignore=tests/browser

nbtest: setup
	$(PY) -m pytest $(XDIST) notebooks

browser: setup
	$(PY) -m pytest $(XDIST) tests/browser

## The machine matrix: every notebook's stored outputs must be facts of arithmetic, not of the machine, so
## nbval runs again under another ISA level and other thread counts (README: "Machines it is tested on").
## The presenter notebook (delivery/presenter/) is compared in every configuration too. The first configuration also
## runs the unit tests, the course's and the delivery rig's (delivery/tests: not the hub's, not the browser's), on
## ATen's unvectorised kernels. Each configuration gets an empty torch.compile (Inductor) cache: its key does not
## include the CPU level, so code compiled for AVX2 would be loaded, and fail to build, under ATEN_CPU_CAPABILITY=default.
## ATEN_CPU_CAPABILITY=default: ATen's scalar kernels; ONEDNN_MAX_CPU_ISA=AVX2: oneDNN without AVX512/AMX.
## Tests of the repository's own files (the notebooks' JSON and prose, the package's source, the generated docs, the
## test machinery): their answer is the same under every torch release and machine configuration, so `make test`
## runs them and `portability` and `test-torch` leave them out.
REPO_TESTS := tests/test_structure.py tests/test_registry_docs.py tests/test_notebooks.py tests/test_lesson_claims.py \
  tests/test_key_code.py tests/test_lesson_filter.py tests/test_nbval_guard.py tests/test_new_lesson.py \
  tests/test_readmes.py tests/test_scheduling.py
$(foreach f,$(REPO_TESTS),$(if $(wildcard $(f)),,$(error REPO_TESTS names $(f), which is not there)))
NOT_REPO_TESTS := $(addprefix --ignore=,$(REPO_TESTS))

## PORTABILITY_UNIT= (empty) leaves the unit tests out: CI runs the first two configurations under the other torch
## releases instead (MACHINE= of test-torch, .ci/run), so that each configuration runs once and the unit suite three times.
PORTABILITY ?= "ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=AVX2" "OMP_NUM_THREADS=1" "OMP_NUM_THREADS=4"
PORTABILITY_UNIT ?= tests delivery/tests --ignore=tests/browser --ignore=delivery/tests/browser $(NOT_REPO_TESTS)
portability: setup
	@status=0; unit="$(PORTABILITY_UNIT)"; \
	for cfg in $(PORTABILITY); do \
	  echo "== portability: $$cfg"; \
	  cache=$$(mktemp -d); \
	  env $$cfg TORCHINDUCTOR_CACHE_DIR=$$cache $(PY) -m pytest $(XDIST) -q -p no:cacheprovider -m "not hub" $$unit notebooks delivery/presenter || status=$$?; \
	  rm -rf $$cache; \
	  unit=""; \
	done; \
	exit $$status

## Another PyTorch release: `make test-torch TORCH=2.15.0` makes .venv-torch-2.15.0 with that torch from PyPI (on Linux
## its default wheel, a CUDA build; without a GPU the tests run on the CPU) and the other pins of requirements.txt
## (not the browser/presenter-only ones), then runs the unit tests (but REPO_TESTS) and nbval over every notebook in it (the delivery
## rig's too: its unit tests but the hub's and the browser's, and the presenter notebook). `make
## setup-torch` is the downloading half alone (CI runs it online, then test-torch offline). pip reads no config
## file there (PIP_CONFIG_FILE=/dev/null), so that a pip.conf's other index, find-links or version cap cannot swap
## the wheel; set TORCH_PIP_ENV= to keep your pip configuration (a proxy, a mirror). MACHINE="OMP_NUM_THREADS=1" (any of
## PORTABILITY's configurations) runs them under that configuration.
TORCH ?=
MACHINE ?=
TORCH_VENV = .venv-torch-$(TORCH)
TORCH_PIP_ENV ?= env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null
BROWSER_ONLY := playwright voila

.venv-torch-%/.amp-course-installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv .venv-torch-$*
	grep -v -E '^(torch|$(subst $(eval) ,|,$(BROWSER_ONLY)))==' requirements.txt > .venv-torch-$*/requirements.txt
	$(TORCH_PIP_ENV) .venv-torch-$*/bin/python -m pip install --quiet --disable-pip-version-check "torch==$*" -r .venv-torch-$*/requirements.txt
	.venv-torch-$*/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	.venv-torch-$*/bin/python -c 'import torch, amp_lessons; assert torch.__version__.split("+")[0] == "$*", torch.__version__; print("torch", torch.__version__, "| CUDA build:", torch.version.cuda, "| GPU:", torch.cuda.is_available())'
	@touch $@

setup-torch:
	@test -n "$(TORCH)" || { echo "usage: make test-torch TORCH=2.15.0 (any release >= 2.11)"; exit 2; }
	@$(MAKE) --no-print-directory $(TORCH_VENV)/.amp-course-installed

test-torch: setup-torch
	@cache=$$(mktemp -d); status=0; \
	env $(MACHINE) TORCHINDUCTOR_CACHE_DIR=$$cache $(TORCH_VENV)/bin/python -m pytest $(XDIST) -p no:cacheprovider -m "not hub" tests notebooks delivery/tests delivery/presenter \
	  --ignore=tests/browser --ignore=delivery/tests/browser $(NOT_REPO_TESTS) || status=$$?; \
	rm -rf $$cache; exit $$status

## The course as others install it (scripts/test_install.py; offline): the wheel holds every file under amp_lessons/;
## installed into a fresh venv, and by `pip install git+<URL>`, it imports every topic and runs the presenter notebook
## outside the source tree; installed into (a copy of) .venv-torch-$(OWN_TORCH) it leaves that torch alone.
OWN_TORCH ?= 2.11.0
test-install: setup
	@$(MAKE) --no-print-directory setup-torch TORCH=$(OWN_TORCH)
	$(PY) scripts/test_install.py --own-torch-env .venv-torch-$(OWN_TORCH)

## Maintainers: refresh the README's screenshots in imgs/ (explorers, dark theme, presenter view; taken by the browser tests).
screenshots: setup
	AMP_COURSE_UPDATE_IMGS=1 $(PY) -m pytest $(XDIST) tests/browser/test_lab_lessons.py delivery/tests/browser/test_voila_presenter.py

## Copy each lesson's `#| export` cells (its key code) into amp_lessons/<topic>/key_code.py (tests/test_key_code.py
## fails while a module and its notebook differ).
export: setup
	$(PY) scripts/export_key_code.py

## Maintainers: re-execute every notebook in a fresh kernel and store clean, reproducible outputs.
notebooks: setup
	$(PY) scripts/run_notebooks.py notebooks/*.ipynb delivery/presenter/*.ipynb

## Benchmarks (figures, not pass/fail tests).
bench: setup
	$(PY) benchmarks/bench_quantize.py
	$(PY) benchmarks/bench_widgets.py
	$(PY) benchmarks/bench_experiments.py
	$(PY) benchmarks/bench_e2e.py

clean:
	-$(VENV)/bin/jupyter kernelspec remove -y $(KERNEL)
	rm -rf $(VENV) .venv-torch-* .pytest_cache build *.egg-info artifacts

include delivery/delivery.mk
