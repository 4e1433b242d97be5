"""Install, check or remove this host's job network (the bridge and the nftables table).

Run as root on every node host before its agent: ``manage.py job_network install``
(``make run`` and ``.ci/run`` do). The agent refuses to start replicas while
``check`` fails. See ``jobs/execution/replica/network.py`` for what it allows.
"""

from django.core.management.base import BaseCommand, CommandError

from jobs.execution.replica import host_network, network


class Command(BaseCommand):
    help = "Install, check or remove this host's job network (bridge and nftables rules)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["install", "check", "remove", "show"])

    def handle(self, *args, action: str, **options) -> None:
        if action == "show":
            self.stdout.write(host_network.host_ruleset())
            return
        try:
            if action == "install":
                host_network.install_host()
            elif action == "remove":
                host_network.remove_host()
        except (network.NetworkError, OSError) as error:
            raise CommandError(f"job network {action}: {error}") from error
        problem = host_network.host_problem() if action != "remove" else None
        if problem:
            raise CommandError(f"job network: {problem}")
        self.stdout.write(f"job network {action}: ok ({network.bridge()}, {network.gateway()})")
