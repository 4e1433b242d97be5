"""An index for the owner's earlier runs of a command (``estimates.history.commands_runs``),
asked on every submission and every estimate.

A command may be 10,000 characters (``MAX_COMMAND_CHARS``), more than PostgreSQL's btree
takes in one entry, so there the index holds the command's ``md5`` and the query asks for
both; SQLite's btree takes any length, and has no ``md5`` of its own outside Django's
connections, so there it holds the command. Not in ``Job.Meta.indexes``, which cannot say
either per database. Built without holding up the site's writes where PostgreSQL can
(``CONCURRENTLY``, outside a transaction).
"""

from django.db import migrations

NAME = "job_owner_command_idx"
COLUMNS = {"postgresql": "owner_id, md5(command)", "sqlite": "owner_id, command"}


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    concurrently = "CONCURRENTLY " if vendor == "postgresql" else ""
    schema_editor.execute(f"CREATE INDEX {concurrently}{NAME} ON jobs_job ({COLUMNS[vendor]})")


def drop(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX {NAME}")


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("jobs", "0018_sample_gpu_util")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
