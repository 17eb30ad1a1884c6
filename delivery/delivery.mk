# The course's delivery rig, apart from the course itself: the presenter view, the workshop hub, `make gpu-check`,
# the load and hub benchmarks and their tests (delivery/tests). Included by the root Makefile, so that every target
# here runs from the repository root (README.md) with the course's own set-up (`setup`, $(PY), $(VENV)).
#
#   make present          the presenter view (delivery/presenter/)
#   make test-delivery    delivery/tests: the presenter notebook under nbval, the gpu-check and workshop unit tests,
#                         then the presenter view in Chromium (delivery/tests/browser/)
#   make setup-workshop   make workshop   make test-hub   make bench-hub      the workshop hub (delivery/workshop/)
#   make test-load        nbval while the machine is busy (delivery/load/load_test.py)
#   make gpu-check        make gpu-wheels                                    GPU machines (delivery/gpu_check/)

.PHONY: present test-delivery test-load setup-workshop workshop test-hub bench-hub gpu-check gpu-wheels

## The explorers for the projector (Voila, no code shown; large type, one explorer per screen; localhost only).
## The course's template (delivery/presenter/jupyter) keeps the page offline.
present: setup
	JUPYTER_PATH=delivery/presenter/jupyter $(VENV)/bin/voila delivery/presenter/explorers.ipynb --template=amp-offline --Voila.ip=127.0.0.1 '--VoilaConfiguration.extension_allowlist=["@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8"]' --VoilaConfiguration.preheat_kernel=True

## The delivery rig's tests (delivery/tests): the presenter notebook under nbval, the CPU parts of gpu-check and the
## workshop's fast tests (the hub itself, marked `hub`, runs under `make test-hub` alone); then, in a second run so
## that no notebook is timed beside a browser, the presenter view in Chromium (skipped with a message where Chromium
## is missing, except under CI=true). Both always run, and make fails if either failed.
test-delivery: setup
	@status=0; \
	$(PY) -m pytest $(XDIST) -m "not hub" delivery/tests delivery/presenter --ignore=delivery/tests/browser || status=$$?; \
	$(PY) -m pytest $(XDIST) delivery/tests/browser || status=$$?; \
	exit $$status

## nbval while the machine is busy (delivery/load/load_test.py): one CPU-burning process per core and waves of 6 kernels
## started at the same moment, while `pytest -n 2` (no --dist, as learners run it) executes lessons 03, 04, 05, 08, 11.
test-load: setup
	$(PY) delivery/load/load_test.py

## A workshop room on this machine (README.md, "Running a workshop on one server"): JupyterHub, one JupyterLab per
## learner, one shared password, every kernel capped in memory (delivery/workshop/). `make setup-workshop` (online) installs
## the hub's pins (delivery/workshop/requirements-hub.txt) into their own venv, delivery/workshop/.venv; the kernels run .venv.
## `make workshop` needs AMP_WORKSHOP_PASSWORD and listens on 127.0.0.1:8000 (AMP_WORKSHOP_IP=0.0.0.0: the room).
HUB_VENV  := delivery/workshop/.venv
HUB_STAMP := $(HUB_VENV)/.amp-workshop-installed

$(HUB_STAMP): delivery/workshop/requirements-hub.txt
	$(PYTHON) -m venv $(HUB_VENV)
	$(HUB_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r delivery/workshop/requirements-hub.txt
	$(HUB_VENV)/bin/jupyterhub --version
	@touch $@

setup-workshop: setup $(HUB_STAMP)

workshop: setup-workshop
	$(HUB_VENV)/bin/jupyterhub -f delivery/workshop/jupyterhub_config.py

## The hub with simulated learners (delivery/tests/test_workshop_hub.py; offline): HUB_LEARNERS (default 4) learners each run
## lessons 00-03 at once in their own kernels through their own server; per-learner time and kernel memory printed.
## Skipped where delivery/workshop/.venv is missing, except under CI=true. `make bench-hub`: how many learners this machine
## holds before a lesson takes twice its time alone (delivery/load/hub_load.py).
test-hub: setup
	AMP_TEST_HUB=1 $(PY) -m pytest -p no:cacheprovider -s -m hub delivery/tests/test_workshop_hub.py

bench-hub: setup-workshop
	$(PY) delivery/load/hub_load.py

## GPU machines: unit tests and nbval on the GPU, the reference measurements and the hardware-vs-emulation checks,
## at most 9 minutes, into gpu-check-results/<date>-<gpu>/ (delivery/gpu_check/gpu_check.py; --plan prints the time budget).
## Offline: `make gpu-wheels` where there is network, copy gpu-wheelhouse/ along; with wheels in it, setup
## installs from it only (pip --no-index --find-links).
GPU_WHEELHOUSE ?= gpu-wheelhouse
ifneq ($(wildcard $(GPU_WHEELHOUSE)/*.whl),)
gpu-check: export PIP_NO_INDEX = 1
gpu-check: export PIP_FIND_LINKS = $(abspath $(GPU_WHEELHOUSE))
endif
gpu-check: setup
	$(PY) delivery/gpu_check/gpu_check.py --wheelhouse $(GPU_WHEELHOUSE)

gpu-wheels: | $(PY)
	$(PY) delivery/gpu_check/gpu_wheels.py --dest $(GPU_WHEELHOUSE)
