# amp-course: `make lab` opens the course, `make test` runs every test. Both set up .venv first.
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

.PHONY: setup lab present docs test unit nbtest browser portability setup-torch test-torch test-install screenshots notebooks bench clean gpu-check gpu-wheels test-load export workshop setup-workshop test-hub bench-hub

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

## The explorers for the projector (Voila, no code shown; large type, one explorer per screen; localhost only).
## The course's template (presenter/jupyter) keeps the page offline.
present: setup
	JUPYTER_PATH=presenter/jupyter $(VENV)/bin/voila presenter/explorers.ipynb --template=amp-offline --Voila.ip=127.0.0.1 '--VoilaConfiguration.extension_allowlist=["@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8"]' --VoilaConfiguration.preheat_kernel=True

## What the docs say of the lesson registry (README's lesson table, the instructors' solutions table and schedule,
## CONTRIBUTING's layout, the package docstring), written from amp_lessons/lessons.py; lesson 00 re-executed (it prints
## the lessons and the schedule). A test fails while they are stale.
docs: setup
	$(PY) scripts/registry_docs.py
	$(PY) scripts/run_notebooks.py notebooks/00_start_here.ipynb

## Every test: unit tests, every notebook executed and compared by nbval, and the real-browser tests
## (JupyterLab and the Voila presenter view in Chromium; skipped with a message where Chromium is missing).
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
	$(PY) -m pytest $(XDIST) tests notebooks presenter --ignore=tests/browser || status=$$?; \
	$(PY) -m pytest $(XDIST) tests/browser || status=$$?; \
	exit $$status
endif

unit: setup
	$(PY) -m pytest $(XDIST) tests --ignore=tests/browser

nbtest: setup
	$(PY) -m pytest $(XDIST) notebooks presenter

browser: setup
	$(PY) -m pytest $(XDIST) tests/browser

## The machine matrix: every notebook's stored outputs must be facts of arithmetic, not of the machine, so
## nbval runs again under another ISA level and other thread counts (README: "Machines it is tested on").
## The first configuration also runs the unit tests, on ATen's unvectorised kernels. Each configuration gets an
## empty torch.compile (Inductor) cache: its key does not include the CPU level, so code compiled for AVX2 would
## be loaded, and fail to build, under ATEN_CPU_CAPABILITY=default.
## ATEN_CPU_CAPABILITY=default: ATen's scalar kernels; ONEDNN_MAX_CPU_ISA=AVX2: oneDNN without AVX512/AMX.
PORTABILITY ?= "ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=AVX2" "OMP_NUM_THREADS=1" "OMP_NUM_THREADS=4"
portability: setup
	@status=0; unit="tests --ignore=tests/browser"; \
	for cfg in $(PORTABILITY); do \
	  echo "== portability: $$cfg"; \
	  cache=$$(mktemp -d); \
	  env $$cfg TORCHINDUCTOR_CACHE_DIR=$$cache $(PY) -m pytest $(XDIST) -q -p no:cacheprovider $$unit notebooks presenter || status=$$?; \
	  rm -rf $$cache; \
	  unit=""; \
	done; \
	exit $$status

## Another PyTorch release: `make test-torch TORCH=2.15.0` makes .venv-torch-2.15.0 with that torch from PyPI (on Linux
## its default wheel, a CUDA build; without a GPU the tests run on the CPU) and the other pins of requirements.txt
## (not the browser/presenter-only ones), then runs the unit tests and nbval over every notebook in it. `make
## setup-torch` is the downloading half alone (CI runs it online, then test-torch offline). pip reads no config
## file there (PIP_CONFIG_FILE=/dev/null), so that a pip.conf's other index, find-links or version cap cannot swap
## the wheel; set TORCH_PIP_ENV= to keep your pip configuration (a proxy, a mirror).
TORCH ?=
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
	TORCHINDUCTOR_CACHE_DIR=$$cache $(TORCH_VENV)/bin/python -m pytest $(XDIST) -p no:cacheprovider tests notebooks presenter --ignore=tests/browser || status=$$?; \
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
	AMP_COURSE_UPDATE_IMGS=1 $(PY) -m pytest $(XDIST) tests/browser/test_lab_lessons.py tests/browser/test_voila_presenter.py

## Copy each lesson's `#| export` cells (its key code) into amp_lessons/<topic>/key_code.py (tests/test_key_code.py
## fails while a module and its notebook differ).
export: setup
	$(PY) scripts/export_key_code.py

## Maintainers: re-execute every notebook in a fresh kernel and store clean, reproducible outputs.
notebooks: setup
	$(PY) scripts/run_notebooks.py notebooks/*.ipynb presenter/*.ipynb

## nbval while the machine is busy (scripts/load_test.py): one CPU-burning process per core and waves of 6 kernels
## started at the same moment, while `pytest -n 2` (no --dist, as learners run it) executes lessons 03, 04, 05, 08, 11.
test-load: setup
	$(PY) scripts/load_test.py

## A workshop room on this machine (README.md, "Running a workshop on one server"): JupyterHub, one JupyterLab per
## learner, one shared password, every kernel capped in memory (workshop/). `make setup-workshop` (online) installs
## the hub's pins (workshop/requirements-hub.txt) into their own venv, workshop/.venv; the kernels run .venv.
## `make workshop` needs AMP_WORKSHOP_PASSWORD and listens on 127.0.0.1:8000 (AMP_WORKSHOP_IP=0.0.0.0: the room).
HUB_VENV  := workshop/.venv
HUB_STAMP := $(HUB_VENV)/.amp-workshop-installed

$(HUB_STAMP): workshop/requirements-hub.txt
	$(PYTHON) -m venv $(HUB_VENV)
	$(HUB_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r workshop/requirements-hub.txt
	$(HUB_VENV)/bin/jupyterhub --version
	@touch $@

setup-workshop: setup $(HUB_STAMP)

workshop: setup-workshop
	$(HUB_VENV)/bin/jupyterhub -f workshop/jupyterhub_config.py

## The hub with simulated learners (tests/test_workshop_hub.py; offline): HUB_LEARNERS (default 4) learners each run
## lessons 00-03 at once in their own kernels through their own server; per-learner time and kernel memory printed.
## Skipped where workshop/.venv is missing, except under CI=true. `make bench-hub`: how many learners this machine
## holds before a lesson takes twice its time alone (scripts/hub_load.py).
test-hub: setup
	AMP_TEST_HUB=1 $(PY) -m pytest -p no:cacheprovider -s tests/test_workshop_hub.py

bench-hub: setup-workshop
	$(PY) scripts/hub_load.py

## Benchmarks (figures, not pass/fail tests).
bench: setup
	$(PY) benchmarks/bench_quantize.py
	$(PY) benchmarks/bench_widgets.py
	$(PY) benchmarks/bench_experiments.py
	$(PY) benchmarks/bench_e2e.py

## GPU machines: unit tests and nbval on the GPU, the reference measurements and the hardware-vs-emulation checks,
## at most 9 minutes, into gpu-check-results/<date>-<gpu>/ (scripts/gpu_check.py; --plan prints the time budget).
## Offline: `make gpu-wheels` where there is network, copy gpu-wheelhouse/ along; with wheels in it, setup
## installs from it only (pip --no-index --find-links).
GPU_WHEELHOUSE ?= gpu-wheelhouse
ifneq ($(wildcard $(GPU_WHEELHOUSE)/*.whl),)
gpu-check: export PIP_NO_INDEX = 1
gpu-check: export PIP_FIND_LINKS = $(abspath $(GPU_WHEELHOUSE))
endif
gpu-check: setup
	$(PY) scripts/gpu_check.py --wheelhouse $(GPU_WHEELHOUSE)

gpu-wheels: | $(PY)
	$(PY) scripts/gpu_wheels.py --dest $(GPU_WHEELHOUSE)

clean:
	-$(VENV)/bin/jupyter kernelspec remove -y $(KERNEL)
	rm -rf $(VENV) .venv-torch-* .pytest_cache build *.egg-info artifacts
