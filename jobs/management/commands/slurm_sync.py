"""``python manage.py slurm_sync``: read Slurm's nodes now, and say what changed."""

from django.core.management.base import BaseCommand, CommandError

from jobs.execution.slurm import cli
from jobs.execution.slurm.inventory import inventory_sync


class Command(BaseCommand):
    help = "Sync Trainyard's Slurm nodes with sinfo now (the periodic task does it every minute)."

    def handle(self, *args, **options) -> None:
        try:
            report = inventory_sync()
        except cli.SlurmUnavailable as error:
            raise CommandError(f"Slurm did not answer: {error}") from error
        for label, names in [
            ("created", report.created),
            ("updated", report.updated),
            ("no longer in Slurm", report.left),
            ("held outside Trainyard changed", report.held_outside),
        ]:
            self.stdout.write(f"{label}: {', '.join(names) or '-'}")
        for name, why in report.skipped.items():
            self.stdout.write(f"skipped {name}: {why}")
