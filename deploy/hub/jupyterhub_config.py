"""JupyterHub for a course on one machine: `deploy/hub/serve.sh` starts it (read that first).

serve.sh checks the settings, creates the state folder and its secrets, and passes what this
file needs in the environment (ATTNLAB_HUB_*); this file only turns them into configuration:

* the hub listens at ATTNLAB_HUB_IP:ATTNLAB_HUB_PORT (127.0.0.1:8000 unless told), its API and
  the proxy's API on 127.0.0.1 only; the proxy is configurable-http-proxy from deploy/hub's
  package-lock.json, its token comes in CONFIGPROXY_AUTH_TOKEN, never on a command line;
* accounts: NativeAuthenticator (sign-up, then an instructor authorizes each student at
  /hub/authorize), or LTI 1.3 from the settings file ``lti13.json`` when ATTNLAB_HUB_AUTH=lti13;
* every hub user runs as a system account of their own (``hubusers.CourseSpawner``: created on
  the first start, a home of mode 0700, the deck copied in once) with per-process limits;
* the idle culler stops servers left idle; nbgrader's exchange and Assignments tab for the
  course ATTNLAB_HUB_COURSE, the instructors ATTNLAB_HUB_INSTRUCTORS.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hubusers  # noqa: E402  (beside this file; jupyterhub -f does not put it on the path)

c = get_config()  # noqa: F821  (jupyterhub provides it)
settings = hubusers.Settings.from_environment(os.environ)

# ------------------------------------------------------------------ where it listens, its state
c.JupyterHub.bind_url = f"http://{settings.ip}:{settings.port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{settings.hub_port}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings.proxy_api_port}"
c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(settings.state / "proxy.pid")
c.JupyterHub.cookie_secret_file = str(
    settings.state / "cookie_secret"
)  # mode 0600 (the hub checks)
c.JupyterHub.db_url = f"sqlite:///{settings.state / 'jupyterhub.sqlite'}"
c.JupyterHub.pid_file = str(settings.state / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every user's server
c.JupyterHub.cleanup_proxy = True

# ------------------------------------------------------------------ accounts
c.Authenticator.admin_users = set(settings.instructors)
if settings.auth == "lti13":
    lti = hubusers.read_private_json(settings.state / "lti13.json")
    c.JupyterHub.authenticator_class = "ltiauthenticator.lti13.auth.LTI13Authenticator"
    c.LTI13Authenticator.issuer = lti["issuer"]
    c.LTI13Authenticator.authorize_url = lti["authorize_url"]
    c.LTI13Authenticator.jwks_endpoint = lti["jwks_endpoint"]
    c.LTI13Authenticator.client_id = set(lti["client_id"])
    c.LTI13Authenticator.username_key = lti.get("username_key", "sub")
    c.Authenticator.allow_all = True  # whoever the course's LMS launches
else:
    c.JupyterHub.authenticator_class = "nativeauthenticator.NativeAuthenticator"
    c.NativeAuthenticator.open_signup = False  # an instructor authorizes each sign-up
    c.NativeAuthenticator.minimum_password_length = 10
    c.NativeAuthenticator.check_common_password = True
    c.NativeAuthenticator.allowed_failed_logins = 5
    c.NativeAuthenticator.seconds_before_next_try = 60
    c.Authenticator.allow_all = True  # NativeAuthenticator lets in only authorized accounts
# Hub names become system account names (hubusers.system_name); keep them plain.
c.Authenticator.username_pattern = r"^[a-z][a-z0-9_-]{0,31}$"

# ------------------------------------------------------------------ every user's server
c.JupyterHub.spawner_class = hubusers.CourseSpawner
hubusers.CourseSpawner.course = settings
c.Spawner.cmd = [str(settings.users_python), "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.env_keep = ["LANG", "LC_ALL"]  # nothing else of the hub's environment
c.Spawner.environment = hubusers.user_environment(settings)
c.Spawner.mem_limit = settings.memory  # shown to the user; enforced per process, see hubusers
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.JupyterHub.concurrent_spawn_limit = 20

# ------------------------------------------------------------------ the idle culler
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={settings.idle_timeout}",
            "--cull-every=60",
        ],
    }
]
