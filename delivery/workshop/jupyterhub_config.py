"""JupyterHub for a workshop on one machine: `make workshop` (README.md, "Running a workshop on one server").

One single-user JupyterLab per learner (SimpleLocalProcessSpawner: every learner is a process of the user who runs
the hub, with a home of their own under the state folder holding their own copy of the notebooks), one shared
password for the room (SharedPasswordAuthenticator, JupyterHub >= 5.3), and every learner's kernel capped in
memory (delivery/workshop/kernel_wrapper.py, through the kernel spec in delivery/workshop/jupyter/kernels/python3/).

Everything is set through the environment, never in this file:

  AMP_WORKSHOP_PASSWORD        the learners' password (8 characters or more); required. Any name with it logs in.
  AMP_WORKSHOP_ADMIN           optional admin user name, with AMP_WORKSHOP_ADMIN_PASSWORD (32 characters or more)
  AMP_WORKSHOP_IP              where the hub listens: 127.0.0.1 (default: this machine only); 0.0.0.0 opens it
                               to the room (then put it behind TLS or on a network you trust: the password
                               travels in clear over plain HTTP)
  AMP_WORKSHOP_PORT            the hub's public port (default 8000); AMP_WORKSHOP_HUB_PORT (8081) and
                               AMP_WORKSHOP_PROXY_API_PORT (8001) are its internal ones, on 127.0.0.1
  AMP_WORKSHOP_STATE           the hub's database, cookie secret and the learners' homes (default delivery/workshop/state)
  AMP_WORKSHOP_API_TOKEN       optional: a token for the REST API with the admin role (scripts, tests)
  AMP_KERNEL_MEMORY_LIMIT      each kernel's memory cap (default 3G; "none" for no cap)
  AMP_KERNEL_THREADS           optional: OMP_NUM_THREADS of each kernel
  AMP_KERNEL_GPU_FRACTION      optional: torch.cuda.set_per_process_memory_fraction of each kernel
  AMP_KERNEL_CULL_IDLE_S       kernels idle this long are shut down, freeing their memory (default 3600; 0: never)

Insecure by design for a short workshop, as JupyterHub's docs say of both classes: anyone with the password can
log in as any learner, and the learners' servers are processes of one system user that can read each other's
files. For anything longer, use real accounts or Kubernetes (delivery/workshop/z2jh-values.yaml).
"""

import os
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (JupyterHub defines it when it loads this file)

WORKSHOP = Path(__file__).resolve().parent
ROOT = WORKSHOP.parents[1]  # the repository (delivery/workshop/../..)
HUB_BIN = Path(sys.executable).parent  # the hub's venv (make setup-workshop)
STATE = Path(os.environ.get("AMP_WORKSHOP_STATE") or WORKSHOP / "state").resolve()
STATE.mkdir(parents=True, exist_ok=True)
(STATE / "home").mkdir(exist_ok=True)


def _env_int(name, default):
    text = os.environ.get(name, str(default))
    if not text.isdigit():
        raise SystemExit(f"{name}={text!r} must be a whole number")
    return int(text)


# -- network: this machine only unless the instructor opens it
c.JupyterHub.ip = os.environ.get("AMP_WORKSHOP_IP", "127.0.0.1")
c.JupyterHub.port = _env_int("AMP_WORKSHOP_PORT", 8000)
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = _env_int("AMP_WORKSHOP_HUB_PORT", 8081)
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{_env_int('AMP_WORKSHOP_PROXY_API_PORT', 8001)}"
c.ConfigurableHTTPProxy.command = [str(HUB_BIN / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")

# -- state: nothing written beside this file or in the current folder
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every learner's server and kernels

# -- one shared password for the room, from the environment
password = os.environ.get("AMP_WORKSHOP_PASSWORD", "")
if len(password) < 8:
    raise SystemExit(
        "Set AMP_WORKSHOP_PASSWORD to the learners' password (8 characters or more), e.g.\n"
        "  AMP_WORKSHOP_PASSWORD='pick-one-for-the-day' make workshop"
    )
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = password
c.Authenticator.allow_all = True  # any name + the password: a new learner
if os.environ.get("AMP_WORKSHOP_ADMIN"):
    c.Authenticator.admin_users = {os.environ["AMP_WORKSHOP_ADMIN"]}
    c.SharedPasswordAuthenticator.admin_password = os.environ.get("AMP_WORKSHOP_ADMIN_PASSWORD", "")

# -- a token for the REST API (the hub test and delivery/load/hub_load.py create learners and start servers with it)
if os.environ.get("AMP_WORKSHOP_API_TOKEN"):
    c.JupyterHub.services = [{"name": "workshop-admin", "api_token": os.environ["AMP_WORKSHOP_API_TOKEN"]}]
    c.JupyterHub.load_roles = [{"name": "admin", "services": ["workshop-admin"]}]

# -- one JupyterLab per learner, in the hub's venv; kernels in the course's .venv, capped
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
c.Spawner.cmd = [str(HUB_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab/tree/00_start_here.ipynb"
c.Spawner.start_timeout = 180  # a busy machine starts servers slowly
c.Spawner.http_timeout = 180
cull_s = _env_int("AMP_KERNEL_CULL_IDLE_S", 3600)
c.Spawner.args = [
    # the workshop's kernel spec only: the notebooks ask for "python3", which is it (delivery/workshop/jupyter comes first)
    "--KernelSpecManager.allowed_kernelspecs=python3",
    "--KernelSpecManager.ensure_native_kernel=False",
    f"--MappingKernelManager.cull_idle_timeout={cull_s}",
    "--MappingKernelManager.cull_interval=60",
] + (["--allow-root"] if os.getuid() == 0 else [])
kernel_env = {"JUPYTER_PATH": str(WORKSHOP / "jupyter")}
for name in ("AMP_KERNEL_MEMORY_LIMIT", "AMP_KERNEL_THREADS", "AMP_KERNEL_GPU_FRACTION"):
    if os.environ.get(name):
        kernel_env[name] = os.environ[name]
c.Spawner.environment = kernel_env


def copy_the_notebooks(spawner):
    """Each learner gets their own copy of the lessons; a copy they already have (their work) is kept."""
    home = Path(spawner.home_dir)
    home.mkdir(parents=True, exist_ok=True)
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        if not (home / nb.name).exists():
            shutil.copy2(nb, home / nb.name)


c.Spawner.pre_spawn_hook = copy_the_notebooks
