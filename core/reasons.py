"""Why things happen to a job: a code and its parameters, read in the reader's language.

Writers (the scheduler, transitions, settle, the executors, billing's stops)
pass a ``Reason``; the row keeps its code and parameters, and its English
text for searches and old readers. Pages, the API (``Accept-Language``), the
CLI and emails render the code in their reader's language; a row written
before codes existed (no code) shows its stored text.

A parameter is a value, a nested reason (``{"code": …, "params": …}``), or a
list of either (rendered one after another, each followed by a space). The
code ``and`` joins its ``items`` as a person lists them ("a, b and c").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from django.utils import translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy

MESSAGES = {
    # Verbatim text that is not ours to translate (a controller's or the kernel's words).
    "text": _("%(text)s"),
    "and": _("%(items)s and %(last)s"),
    # Submission and the queue (jobs/services/submit.py, jobs/scheduler/reasons.py).
    "queued": _("Queued; waiting for the scheduler"),
    "submitted": _("Submitted by %(user)s; waiting for the scheduler"),
    "wait.quota": ngettext_lazy(
        "Waiting for quota: needs %(need)s; your quota is %(limit)s and %(used)s is in use",
        "Waiting for quota: needs %(need)s; your quota is %(limit)s and %(used)s are in use",
        "used_count",
    ),
    "wait.held": _(
        "Waiting for resources: what it needs is held for job #%(job)s, which is ahead in the queue"
    ),
    "wait.ports": _(
        "Waiting for resources: needs %(need)s host ports; %(free)s of the pool's %(size)s are free"
    ),
    "wait.no_node": _("Waiting for resources: no node is ready"),
    # Borrowing idle quota and preemption (jobs/scheduler/preemption.py).
    "wait.borrow": _(
        "Waiting for quota: needs %(need)s beyond your quota; you may borrow %(limit)s and "
        "%(used)s is borrowed"
    ),
    "wait.image": _("Waiting for image %(image)s to be added"),
    "image.failed": _("Image %(name)s could not be added: %(problem)s"),
    "wait.kept": _(
        "Waiting for quota: the idle cards it could borrow are kept for job #%(job)s, "
        "which is within its quota"
    ),
    "wait.nothing_idle": _("%(reason)s; no idle card to borrow now"),
    "wait.preempting": _(
        "Waiting for resources: stopping %(jobs)s, which borrow idle quota; starts on what "
        "they free"
    ),
    "wait.no_model": _("Waiting for resources: no ready node has %(model)s cards"),
    "wait.node": _("Waiting for resources: needs a node with %(what)s; none has them"),
    "wait.outside": _("%(reason)s; jobs outside Trainyard hold %(cards)s on those nodes"),
    "wait.nodes_none": _(
        "Waiting for resources: needs %(nodes)s nodes with %(what)s; none has them"
    ),
    "wait.nodes": ngettext_lazy(
        "Waiting for resources: needs %(nodes)s nodes with %(what)s; %(count)s has them",
        "Waiting for resources: needs %(nodes)s nodes with %(what)s; %(count)s have them",
        "count",
    ),
    # Amounts inside the waits.
    "amount.cards": ngettext_lazy("%(count)s %(model)s card", "%(count)s %(model)s cards", "count"),
    "amount.cores": _("%(cores)s CPU cores"),
    "amount.gib": _("%(gib)s GiB"),
    "amount.memory": _("%(gib)s GiB of memory"),
    "amount.vgpu": _("%(percent)s%% of %(model)s virtual-GPU compute"),
    "free.cards": ngettext_lazy(
        "%(count)s free %(model)s card", "%(count)s free %(model)s cards", "count"
    ),
    "free.vgpu": ngettext_lazy(
        "%(count)s %(model)s card with %(percent)s%% compute and %(gib)s GiB of card memory free",
        "%(count)s %(model)s cards with %(percent)s%% compute and %(gib)s GiB of card "
        "memory free each",
        "count",
    ),
    "free.cores": _("%(cores)s free CPU cores"),
    "free.memory": _("%(gib)s GiB of free memory"),
    "free.storage": _("%(gib)s GiB of free temporary storage"),
    # Starting and running (jobs/scheduler/writes.py, jobs/execution/report.py).
    "start": _("Starting on %(placement)s"),
    "start.borrowed": _("Starting on %(placement)s, borrowing idle quota (preemptible)"),
    "start.away": _(
        "%(start)s; without its checkpoint, which stays on %(nodes)s (not free for it now)"
    ),
    "start.slurm": _("Submitted to Slurm, which picks the %(model)s node and cards"),
    "start.slurm_node": _("Slurm started it on %(placement)s"),
    "start.node_cards": _("%(node)s (cards %(cards)s)"),
    "start.node": _("%(node)s"),
    "start.more": _("%(first)s; %(rest)s"),
    "running": ngettext_lazy(
        "The replica is running (attempt %(attempt)d).",
        "All %(count)d replicas are running (attempt %(attempt)d).",
        "count",
    ),
    # Stops (jobs/services/stop.py, jobs/execution/settle.py, the executors).
    "stopped": _("Stopped"),
    "stopped.by": _("Stopped by %(user)s"),
    "stopped.idle_cards": _(
        "Stopped by the site's idle-cards policy: its cards averaged %(percent)s %% GPU use "
        "and stayed idle %(minutes)s minutes after its owner was told."
    ),
    "stop.requested": _("Stop requested by %(user)s"),
    "stopped.unstarted": _("Stopped before it started."),
    "superseded": _("Superseded before it started."),
    "stopped.peer": _("Replica %(index)d ended (%(state)s); stopping the other replicas."),
    # The Queue page (jobs/services/queue.py).
    "queue.moved": _("Moved by %(user)s past job #%(job)s in the queue"),
    "queue.priority": _("Priority set to %(priority)s by %(user)s"),
    "priority.normal": _("Normal"),
    "priority.high": _("High"),
    "borrow.ended": _("Its owner's quota has room for it now: no longer borrowing"),
    "preempting": _("Preempting for job #%(job)s: TERM now, KILL after the grace period"),
    "preempted": _("Preempted for job #%(job)s; back in the queue (not counted as a retry)"),
    # How an attempt ended, as a word inside another reason (the attempt states' labels).
    "attempt.succeeded": _("Succeeded"),
    "attempt.failed": _("Failed"),
    "attempt.stopped": _("Stopped"),
    "attempt.timed_out": _("Timed out"),
    "attempt.lost": _("Lost"),
    "timeout": ngettext_lazy(
        "Max run time of %(minutes)d minute exceeded.",
        "Max run time of %(minutes)d minutes exceeded.",
        "minutes",
    ),
    "free_used_up": _("free %(model)s hours used up (%(grant)s card-hours)"),
    "free_used": _(
        "%(percent)s %% of your free %(model)s card-hours are used "
        "(%(used)s of %(grant)s card-hours)."
    ),
    "ports.changed": _("Ports changed by %(user)s: %(before)s → %(after)s"),
    # An account's audit lines (accounting/services/accounts.py).
    "billing.enabled": _("Billing enabled by %(actor)s"),
    "billing.disabled": _("Billing disabled by %(actor)s"),
    # How a replica ended (jobs/execution/replica/failure.py, the executors).
    "exit.ok": _("Exited with code 0."),
    "exit.succeeded": _("Every replica exited with code 0."),
    "exit.code": _("exit code %(code)s"),
    "exit.signal": _("exit code %(code)s (%(signal)s)"),
    "exit.killed": _("killed by %(signal)s"),
    "exited": _("Exited with %(summary)s. %(causes)sLast lines of the log:\n%(tail)s"),
    "oom": _("Out of memory: the replica went over its memory limit of %(limit)s GiB."),
    "disk_full": _(
        "Disk full: %(free)s MiB of %(total)s MiB free on node %(node)s, "
        "where the job writes its output and log."
    ),
    "storage": _(
        "Storage limit exceeded: %(used)s GiB written of %(limit)s GiB "
        "(its output folder, /tmp and /dev/shm together)."
    ),
    "missing": _("Missing on the node: %(items)s"),
    # What the job does about it (jobs/execution/settle.py): the user's error first.
    "failed.exited": _(
        "Exited with %(summary)s on replica %(index)d, attempt %(attempt)d; no retries left. "
        "%(causes)sLast lines of the log:\n%(tail)s"
    ),
    "retry.exited": _(
        "Exited with %(summary)s on replica %(index)d, attempt %(attempt)d; restarting it "
        "(retry %(used)d of %(retries)d). %(causes)sLast lines of the log:\n%(tail)s"
    ),
    "retry_all.exited": _(
        "Exited with %(summary)s on replica %(index)d, attempt %(attempt)d; restarting every "
        "replica (retry %(used)d of %(retries)d). %(causes)sLast lines of the log:\n%(tail)s"
    ),
    "failed": _("Replica %(index)d failed on attempt %(attempt)d (no retries left): %(reason)s"),
    "retry": _(
        "Replica %(index)d failed on attempt %(attempt)d; restarting it "
        "(retry %(used)d of %(retries)d): %(reason)s"
    ),
    "retry_all": _(
        "Replica %(index)d failed on attempt %(attempt)d; restarting every replica "
        "(retry %(used)d of %(retries)d): %(reason)s"
    ),
    # The platform's faults: not the user's, not counted against the job.
    "lost": _(
        "Replica %(index)d was lost with node %(node)s (%(reason)s); waiting for resources "
        "to restart every replica elsewhere."
    ),
    "lost.final": _("Replica %(index)d was lost on node %(node)s too many times: %(reason)s"),
    "node_lost": _("Node %(node)s was lost: %(reason)s"),
    "no_heartbeat": _("No heartbeat from the node agent since %(time)s."),
    "supervisor_gone": _("The replica's supervisor on node %(node)s disappeared."),
    "no_record": _("Node %(node)s's agent has no record of this replica."),
    "prepare_failed": _("Could not prepare the replica on node %(node)s: %(error)s."),
    "network_failed": _("Could not make the replica's network on node %(node)s: %(error)s."),
    # A job's image on its node (jobs/execution/replica/image_root.py).
    "image.preparing": _("Preparing image %(image)s (%(done)s of %(total)s MB)"),
    "image.broken": _(
        "Image %(image)s cannot be used: %(error)s. Trying again cannot help, so the job "
        "failed without using its retries; an admin must repair or replace the image."
    ),
    "image.node": _("Node %(node)s could not prepare image %(image)s: %(error)s."),
    "isolation": _(
        "Node %(node)s cannot isolate jobs: %(problem)s. An admin installs bubblewrap "
        "and nftables and runs `manage.py job_network install` as root (make run does)."
    ),
    # Slurm (jobs/execution/slurm/).
    "slurm.lookahead": _(
        "Waiting its turn to enter Slurm's queue: %(waiting)s %(model)s jobs admitted before "
        "it wait there (Trainyard's queue order decides who enters next)"
    ),
    "slurm.queued": _("Slurm job %(id)s is waiting in Slurm's queue: %(reason)s."),
    # Why, as Slurm says (jobs/execution/slurm/pending.py)
    "slurm.why.resources": _("the resources it needs are in use by other Slurm jobs"),
    "slurm.why.priority": _("Slurm jobs of higher priority go first"),
    "slurm.why.dependency": _("it waits for the Slurm jobs it depends on"),
    "slurm.why.never": _("a Slurm job it depends on failed, so it can never start"),
    "slurm.why.held_user": _("held in Slurm by a user (`scontrol release %(id)s` lets it go)"),
    "slurm.why.held_admin": _("held in Slurm by an administrator"),
    "slurm.why.begin": _("the start time it was given in Slurm has not come yet"),
    "slurm.why.nodes": _("a node it needs is down, drained or reserved (%(nodes)s)"),
    "slurm.why.partition": _("Slurm's partition is down or inactive"),
    "slurm.why.limit": _("a Slurm limit holds it (`%(limit)s`)"),
    "slurm.why.reservation": _("it waits for its Slurm reservation"),
    "slurm.why.none": _("Slurm has not considered it yet"),
    "slurm.why.launch": _("Slurm could not launch it and holds it"),
    "slurm.why.other": _("Slurm says `%(raw)s`"),
    "slurm.ended": _("Slurm job %(id)s ended %(state)s. %(detail)s"),
    "slurm.vanished": _(
        "Slurm no longer knows the job and its replica left no exit status; "
        "it is not counted against the job."
    ),
    "slurm.lost": _("Slurm lost the job (%(state)s); it is not counted against the job."),
    "slurm.oom": _("The replica ran out of its %(memory)d MiB of memory."),
    "slurm.cancelled": _("Cancelled in Slurm."),
    "slurm.peer": _("Stopped with its peers after replica %(index)d failed."),
    "slurm.refused": _("Slurm refused the job: %(message)s"),
    "slurm.nodes_closed": _(
        "Slurm refused the job because every node of its GPU model is closed in Trainyard: "
        "%(message)s"
    ),
    "slurm.unreachable": _("Waiting for the Slurm controller to answer; Trainyard keeps trying."),
}


@dataclass(frozen=True)
class Reason:
    """A code of ``MESSAGES`` and its parameters (values, nested reasons, lists of either)."""

    code: str
    params: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.code not in MESSAGES:
            raise ValueError(f"unknown reason code {self.code!r}")

    @classmethod
    def of(cls, value: Reason | dict | str | None) -> Reason:
        """A reason from what a row, a file or a task carries; plain text stays verbatim."""
        if isinstance(value, Reason):
            return value
        if isinstance(value, dict) and value.get("code") in MESSAGES:
            return cls(value["code"], dict(value.get("params") or {}))
        return cls("text", {"text": str(value or "")})

    @cached_property
    def json_params(self) -> dict:
        """The parameters as JSON keeps them (reasons are not changed once made)."""
        return {key: _plain(value) for key, value in self.params.items()}

    def as_json(self) -> dict:
        return {"code": self.code, "params": self.json_params}

    def text(self) -> str:
        """In the active language."""
        return reason_text(self.code, self.json_params)

    @cached_property
    def english(self) -> str:
        if translation.get_language() == "en":  # a caller switched once for many
            return self.text()
        with translation.override("en"):
            return self.text()

    def __str__(self) -> str:
        return self.text()


def reason_text(code: str, params: dict | None, fallback: str = "") -> str:
    """``code`` with ``params`` in the active language; ``fallback`` for a row without one."""
    message = MESSAGES.get(code or "")
    if message is None:
        return fallback
    params = params or {}
    try:
        if code == "and":
            items = [_render(item) for item in params["items"]]
            if len(items) == 1:
                return items[0]
            return str(message % {"items": ", ".join(items[:-1]), "last": items[-1]})
        return str(message % {key: _render(value) for key, value in params.items()})
    except (KeyError, TypeError, ValueError):
        return fallback


def _render(value):
    if isinstance(value, Reason):
        return value.text()
    if isinstance(value, dict):
        return reason_text(value.get("code", ""), value.get("params"), "")
    if isinstance(value, list):
        return "".join(f"{_render(item)} " for item in value)
    return value


def _plain(value):
    """``value`` as JSON keeps it: nested reasons as objects, other numbers (Decimal) as text."""
    if isinstance(value, Reason):
        return value.as_json()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)
