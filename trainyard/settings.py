"""Trainyard settings, driven by environment variables.

With nothing set, Trainyard runs embedded and local: SQLite and a file-system
Celery broker under ``var/``, plain HTTP and a generated development key, and
the site's own error pages (Django's debug pages only with ``TRAINYARD_DEBUG=1``).
Production sets ``DATABASE_URL``, ``REDIS_URL``, ``SECRET_KEY``, ``DEBUG=0`` and
``ALLOWED_HOSTS``.
"""

import os
import re
import warnings
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from trainyard.beat import beat_schedule
from trainyard.databases import databases
from trainyard.env import env_bool, env_list
from trainyard.filesystem_broker import transport_options
from trainyard.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TRAINYARD_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


# DEBUG=0 is production: HTTPS only, a SECRET_KEY of its own. Without it Trainyard runs
# locally (`make run`, the tests): plain HTTP on this machine, a generated development key.
LOCAL_RUN = env_bool("DEBUG", True)
# Django's debug pages (a traceback, or every URL pattern on a 404) only when asked, and
# never in production: a demo shows the site's own 404 and 500 pages (templates/).
DEBUG = LOCAL_RUN and env_bool("TRAINYARD_DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not LOCAL_RUN:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=0 (production).")
    # A development key, stable per checkout so sessions survive restarts.
    key_file = VAR_DIR / "dev-secret-key"
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        # Readable by the platform's user only (a replica runs as another uid).
        descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(get_random_secret_key())
    if key_file.stat().st_mode & 0o077:  # made by an older version: close it now
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
# `make run HOST=<address>` serves on that address: it is a name of this site too.
if os.environ.get("HOST", "") not in ("", "0.0.0.0", "::", *ALLOWED_HOSTS):
    ALLOWED_HOSTS.append(os.environ["HOST"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
# Each job's open port is its own site, j<job>-<port>.<domain>, behind the authenticated proxy
# (nginx, `manage.py run_proxy`; docs/port-proxy.md). In production a registrable domain of its
# own (https://jobs.example-trainyard.net), never one under the dashboard's.
TRAINYARD_PROXY_ORIGIN = os.environ.get("TRAINYARD_PROXY_ORIGIN", "http://jobs.localhost:8080")
_proxy = urlsplit(TRAINYARD_PROXY_ORIGIN)
ALLOWED_HOSTS.append("." + (_proxy.hostname or "jobs.localhost"))
_PORT_SITES = f"{_proxy.scheme}://*.{_proxy.hostname}:*"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    # The API docs' Swagger UI from its own static files (its CDN page breaks the CSP).
    "ninja",
    "accounts",
    "resources",
    "jobs",
    "billing",
    "accounting",
    "notifications",
    # Project-wide management commands (seed_demo); no models.
    "trainyard",
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "trainyard.middleware.PortSiteMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "trainyard.api_middleware.ApiJsonErrorsMiddleware",
    "trainyard.api_middleware.ApiTextInputMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "trainyard.middleware.LoginRequiredMiddleware",
    "trainyard.middleware.UserTimezoneMiddleware",
    # Last, as django-axes asks: it turns a locked-out log-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "trainyard.urls"
WSGI_APPLICATION = "trainyard.wsgi.application"
ASGI_APPLICATION = "trainyard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "django.template.context_processors.tz",
                "accounting.context_processors.free_hours_banner",
                "notifications.context_processors.unread_notifications",
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    }
]

DATABASE_URL = os.environ.get("DATABASE_URL", "")
DATABASES = databases(
    DATABASE_URL,
    var_dir=VAR_DIR,
    prepared=env_bool("TRAINYARD_DB_PREPARED_STATEMENTS", True),
)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
# Whether every process sees the same cache (Redis), so it can hold cross-process marks.
TRAINYARD_SHARED_CACHE = bool(REDIS_URL)
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    # A host in the URL, or kombu warns "No hostname was supplied" on every connection.
    CELERY_BROKER_URL = "filesystem://localhost//"
    # kombu's own transport can hand a reader a half-written message; this one cannot.
    CELERY_BROKER_TRANSPORT = "trainyard.filesystem_broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = transport_options(VAR_DIR / "broker")

# Reliability first: a task is acknowledged only after it ran, and a task whose
# worker died goes back to the queue; every task is written to be idempotent.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fix-up closes every database connection before and after each task
# unless this is set: each task then paid for a new PostgreSQL backend, about a third of
# the machine's CPU in a burst of short tasks. Tasks keep them as web requests do
# instead (``trainyard/celery.py``); the fix-up still closes them every this many tasks.
CELERY_DB_REUSE_MAX = 1000
# Notifications have a queue and a worker of their own (Procfile ``notify``): a burst of
# job ends, or a slow mail server, then never delays scheduling, launches and exit reports.
NOTIFICATIONS_QUEUE = "notifications"
# Adding an image takes minutes (a registry pull, a build): on a queue and a worker of its
# own (Procfile ``images``), or the central worker's processes hold every pass back meanwhile.
IMAGES_QUEUE = "images"
CELERY_TASK_ROUTES = {
    "notifications.tasks.*": {"queue": NOTIFICATIONS_QUEUE},
    "jobs.tasks.image_add": {"queue": IMAGES_QUEUE},
}
# Seconds between two passes of each node agent (exits, deadlines, heartbeats).
TRAINYARD_AGENT_POLL_SECONDS = float(os.environ.get("TRAINYARD_AGENT_POLL_SECONDS", "2"))
# A poll not run by then is dropped; longer than a busy (or file-system) broker's delivery.
TRAINYARD_AGENT_POLL_EXPIRES = max(10.0, 5 * TRAINYARD_AGENT_POLL_SECONDS)
# The node agent's and the Slurm backend's tasks live outside an app's tasks.py.
CELERY_IMPORTS = ["jobs.execution.agent.tasks", "jobs.execution.slurm.tasks"]

# Mail (notifications): printed on the console unless EMAIL_HOST names an SMTP server.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)
# STARTTLS on the submission port 587 by default; EMAIL_USE_SSL=1 for TLS from the start (465).
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", not EMAIL_USE_SSL)
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "465" if EMAIL_USE_SSL else "587"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
# Seconds a mail server may take before the send fails (and its task retries).
EMAIL_TIMEOUT = 20
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Trainyard <trainyard@localhost>")
# Links in emails start with this; the embedded run serves on the address below.
TRAINYARD_BASE_URL = os.environ.get(
    "TRAINYARD_BASE_URL", "http://127.0.0.1:8000" if LOCAL_RUN else ""
).rstrip("/")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out log-in before a password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Log-in throttling: 5 failed passwords for one username from one address lock that
# pair out for 15 minutes, and a try during the lock starts them again (axes' default).
# The API's bearer tokens are not passwords: not throttled.
AXES_VERBOSE = False  # no banner on every manage.py command
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "trainyard.login_lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "trainyard.login_lockout.client_address"
# Proxies in front that append the client's address to X-Forwarded-For (0: none, use the peer's).
TRAINYARD_PROXY_COUNT = int(os.environ.get("TRAINYARD_PROXY_COUNT", "0"))
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "jobs:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if LOCAL_RUN
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# Locally (no collectstatic) WhiteNoise serves the apps' static folders as they are, and
# would warn at every start that STATIC_ROOT, which only collectstatic makes, is missing.
WHITENOISE_USE_FINDERS = LOCAL_RUN
if LOCAL_RUN:
    warnings.filterwarnings("ignore", message=re.escape(f"No directory at: {STATIC_ROOT}"))

# Production hardening; each is relaxed only for a local run.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not LOCAL_RUN)
# __Host-: Secure, host-only, Path=/; no other site (a job's port's included) can set them.
# Browsers keep Secure cookies of http://localhost and 127.0.0.1 too (potentially trustworthy).
SESSION_COOKIE_NAME = "__Host-trainyard-session"
CSRF_COOKIE_NAME = "__Host-trainyard-csrf"
LANGUAGE_COOKIE_NAME = "__Host-trainyard-language"
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = LANGUAGE_COOKIE_SECURE = True
# The browser's time zone, which trainyard.js stores (trainyard.middleware).
TIME_ZONE_COOKIE_NAME = "__Host-trainyard-tz"
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0" if LOCAL_RUN else "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = not LOCAL_RUN
SECURE_HSTS_PRELOAD = not LOCAL_RUN
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Scripts, styles and everything else from this site only: no inline script or style
# attribute runs (htmx's indicator styles are in trainyard.css; see base.html).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        # The log-in goes on to the job port's site it was asked for (docs/port-proxy.md).
        "form-action": ["'self'", _PORT_SITES],
        "frame-ancestors": ["'none'"],
    }
}

# Quiet by default: a line per job event (logger ``trainyard.jobs``) and per warning or error.
# TRAINYARD_VERBOSE=1 (`make run V=1`) adds a line per task a worker receives and runs, per
# task beat sends, and per web request (trainyard/gunicorn.py).
TRAINYARD_VERBOSE = env_bool("TRAINYARD_VERBOSE", False)
ROUTINE_LOG_LEVEL = "INFO" if TRAINYARD_VERBOSE else "WARNING"
LOGGING = logging_config(
    routine_level=ROUTINE_LOG_LEVEL, root_level=os.environ.get("LOG_LEVEL", "INFO")
)

# Placement scores nodes by the fragmentation it adds for the recent jobs' shapes
# (jobs/scheduler/workload.py); off: best fit alone.
TRAINYARD_FRAGMENTATION_AWARE = env_bool("TRAINYARD_FRAGMENTATION_AWARE", True)
# The most jobs one scheduling pass starts (Slurm's sched_max_job_start): the rest of a
# burst go to the next pass, queued at once, so that no pass holds its lock for long and
# the first jobs launch while the others are decided (jobs/scheduler/run.py).
TRAINYARD_PASS_MAX_STARTS = int(os.environ.get("TRAINYARD_PASS_MAX_STARTS") or 2000)

# How often each agent samples its running attempts' CPU, memory, I/O and cards (seconds).
TRAINYARD_USAGE_SAMPLE_SECONDS = float(os.environ.get("TRAINYARD_USAGE_SAMPLE_SECONDS", "10"))
# Days samples are kept (one a minute after their first hour).
TRAINYARD_USAGE_RETENTION_DAYS = float(os.environ.get("TRAINYARD_USAGE_RETENTION_DAYS", "30"))
# Where node agents keep replica state, logs and outputs (one folder per node).
TRAINYARD_NODE_ROOT = Path(os.environ.get("TRAINYARD_NODE_ROOT", VAR_DIR / "nodes"))
# Where project data (code versions, datasets, pretrained models) lives on disk.
TRAINYARD_DATA_ROOT = Path(os.environ.get("TRAINYARD_DATA_ROOT", VAR_DIR / "data"))
# Where replicas' checkpoints live (<root>/<job>/replica-<i>): shared storage lets a job
# resume on another node. Empty: on each node, beside the replica's output.
TRAINYARD_CHECKPOINT_ROOT = (
    Path(os.environ["TRAINYARD_CHECKPOINT_ROOT"])
    if os.environ.get("TRAINYARD_CHECKPOINT_ROOT")
    else None
)
# The site's image store, an OCI image layout every node reads (shared storage in production,
# as the data root); each node unpacks what its jobs use into its own cache, kept under a size
# (GiB) by evicting the least recently used image not in use. Jobs with no image, or on an
# image naming the node's own system, run on the host's root only where HOST_SYSTEM_JOBS is on.
TRAINYARD_IMAGE_STORE = Path(os.environ.get("TRAINYARD_IMAGE_STORE", VAR_DIR / "images"))
TRAINYARD_IMAGE_CACHE = Path(os.environ.get("TRAINYARD_IMAGE_CACHE", VAR_DIR / "image-cache"))
TRAINYARD_IMAGE_CACHE_GIB = float(os.environ.get("TRAINYARD_IMAGE_CACHE_GIB", "50"))
TRAINYARD_HOST_SYSTEM_JOBS = env_bool("TRAINYARD_HOST_SYSTEM_JOBS", True)
# Registries (host:port) the site runs over plain HTTP, for admins' registry references.
TRAINYARD_IMAGE_INSECURE_REGISTRIES = env_list("TRAINYARD_IMAGE_INSECURE_REGISTRIES", "")
# Currency of every price and charge.
TRAINYARD_CURRENCY = os.environ.get("TRAINYARD_CURRENCY", "CNY")
# Length of one usage-ledger period (s); the accrual writes one row per attempt and period.
TRAINYARD_BILLING_PERIOD_SECONDS = 60
# "off" runs replicas as plain processes even where bubblewrap is installed.
TRAINYARD_SANDBOX = os.environ.get("TRAINYARD_SANDBOX", "auto")
# Replicas run as uid BASE + their host slot (jobs/execution/replica/slots.py): no passwd
# entry needed, and no two live replicas on a host share one.
TRAINYARD_SANDBOX_UID_BASE = int(os.environ.get("TRAINYARD_SANDBOX_UID_BASE", "200000"))
TRAINYARD_SANDBOX_UID_COUNT = 100_000
# Host-wide state of the replicas (slot leases): shared by every install on the host.
TRAINYARD_HOST_RUN_DIR = Path(os.environ.get("TRAINYARD_HOST_RUN_DIR", "/run/trainyard"))
# Each replica's own network (jobs/execution/replica/network.py): the host's job bridge and
# subnet, the other hosts' job subnets ("subnet=via-address", routed), egress, and more
# addresses no job may reach besides the database, the broker and ALLOWED_HOSTS.
TRAINYARD_JOB_BRIDGE = os.environ.get("TRAINYARD_JOB_BRIDGE", "tyjobs0")
TRAINYARD_JOB_SUBNET = os.environ.get("TRAINYARD_JOB_SUBNET", "10.213.0.0/16")
TRAINYARD_JOB_PEER_SUBNETS = env_list("TRAINYARD_JOB_PEER_SUBNETS", "")
TRAINYARD_JOB_EGRESS = env_bool("TRAINYARD_JOB_EGRESS", True)
TRAINYARD_PLATFORM_ADDRESSES = env_list("TRAINYARD_PLATFORM_ADDRESSES", "")
# Without the sandbox (bubblewrap, the job network, root) no replica starts, unless this is
# set: plain processes that can reach everything the agent can. A single-user laptop only.
TRAINYARD_UNSAFE_PLAIN_PROCESSES = env_bool("TRAINYARD_UNSAFE_PLAIN_PROCESSES", False)

# The nodes this agent serves (run_agent sets them from --node); unset: every local node.
# An agent acts on nothing else: a node name is never a path.
TRAINYARD_AGENT_NODES = [n for n in os.environ.get("TRAINYARD_AGENT_NODES", "").split(",") if n]

# Slurm backend (jobs/execution/slurm): inventory and tracking run only when this is on.
TRAINYARD_SLURM_ENABLED = env_bool("TRAINYARD_SLURM", False)
# The partition whose nodes Trainyard uses and submits to ("" = every node, default partition).
TRAINYARD_SLURM_PARTITION = os.environ.get("TRAINYARD_SLURM_PARTITION", "")
# The Slurm account Trainyard's jobs are charged to ("" = the submitting user's default).
TRAINYARD_SLURM_ACCOUNT = os.environ.get("TRAINYARD_SLURM_ACCOUNT", "")
# Folder holding sbatch, squeue, scancel, sinfo and sacct ("" = found on PATH).
TRAINYARD_SLURM_BIN_DIR = os.environ.get("TRAINYARD_SLURM_BIN_DIR", "")
# slurm.conf the tools read (passed as SLURM_CONF; "" = Slurm's own default).
TRAINYARD_SLURM_CONF = os.environ.get("TRAINYARD_SLURM_CONF", os.environ.get("SLURM_CONF", ""))
# Slurm job names start with this; it tells this installation's jobs from anyone else's.
TRAINYARD_SLURM_JOB_PREFIX = os.environ.get("TRAINYARD_SLURM_JOB_PREFIX", "trainyard")
# Seconds a Slurm tool may take before the controller counts as unreachable for this pass.
TRAINYARD_SLURM_COMMAND_TIMEOUT = float(os.environ.get("TRAINYARD_SLURM_COMMAND_TIMEOUT", "20"))
# Seconds between tracking passes (replica starts and exits, read from their files).
TRAINYARD_SLURM_TRACK_SECONDS = float(os.environ.get("TRAINYARD_SLURM_TRACK_SECONDS", "1"))
# Seconds between two `squeue` calls of the tracking (what only Slurm knows), and inventory syncs.
TRAINYARD_SLURM_QUERY_SECONDS = float(os.environ.get("TRAINYARD_SLURM_QUERY_SECONDS", "5"))
# How many admitted jobs of one GPU model may wait inside Slurm at once (Slurm places
# them); empty or 0: the model's cards on Slurm nodes (``jobs/scheduler/lookahead.py``).
TRAINYARD_SLURM_LOOKAHEAD = int(os.environ.get("TRAINYARD_SLURM_LOOKAHEAD") or 0)
TRAINYARD_SLURM_SYNC_SECONDS = float(os.environ.get("TRAINYARD_SLURM_SYNC_SECONDS", "60"))
# Tracking and the inventory need the Slurm tools this turns on: without it beat sends them
# nothing (a Slurm node only ever comes from the inventory, or from an admin under it).
CELERY_BEAT_SCHEDULE = beat_schedule(
    agent_poll_seconds=TRAINYARD_AGENT_POLL_SECONDS,
    agent_poll_expires=TRAINYARD_AGENT_POLL_EXPIRES,
    slurm=(TRAINYARD_SLURM_TRACK_SECONDS, TRAINYARD_SLURM_SYNC_SECONDS)
    if TRAINYARD_SLURM_ENABLED
    else None,
)
