"""Run the node agent: one Celery worker consuming the queues (``node.<name>``) of local nodes.

On a real compute node pass ``--node <its name>``; without it the agent serves
every local node in the database, which is what the demo (``make run``) wants.
Nodes added later need a restart of the agent.
"""

from celery import current_app as app
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from jobs.execution.agent.tasks import agent_queues
from resources.models import Node


class Command(BaseCommand):
    help = "Run the node agent for the given local nodes (default: all local nodes)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--node", action="append", dest="nodes", help="a node to serve (repeatable)"
        )
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args, nodes: list[str] | None, concurrency: int, loglevel: str, **options):
        local = Node.objects.filter(executor=Node.Executor.LOCAL)
        names = list(local.filter(name__in=nodes) if nodes else local)
        unknown = set(nodes or []) - {node.name for node in names}
        if unknown:
            raise CommandError(
                _("No local node named %(names)s.") % {"names": ", ".join(sorted(unknown))}
            )
        if not names:
            raise CommandError(_("There is no local node to serve."))
        if nodes:  # the agent acts on these nodes only (its worker processes inherit this)
            settings.TRAINYARD_AGENT_NODES = [node.name for node in names]

        queues = ",".join(queue for node in names for queue in agent_queues(node.name))
        self.stdout.write(f"Serving {len(names)} node(s): {queues}")
        app.worker_main(
            [
                "worker",
                "--queues",
                queues,
                "--concurrency",
                str(concurrency),
                "--loglevel",
                loglevel,
                "--hostname",
                f"agent-{names[0].name}@%h" if nodes else "agent@%h",
                "--without-gossip",
                "--without-mingle",
            ]
        )
