"""ApiToken moves here from jobs with its table (``jobs_apitoken``) and its rows.

The table was created by jobs' migration 0001: this migration only adds the
model to this app's state (jobs 0009 removes it from jobs' state), and moves
its content type, so the admin permissions given on it stay given.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def content_type_to(app_label: str, other: str):
    def move(apps, schema_editor) -> None:
        content_types = apps.get_model("contenttypes", "ContentType").objects.using(
            schema_editor.connection.alias
        )
        if not content_types.filter(app_label=app_label, model="apitoken").exists():
            content_types.filter(app_label=other, model="apitoken").update(app_label=app_label)

    return move


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("jobs", "0008_model_names"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "name",
                            models.CharField(default="default", max_length=64, verbose_name="name"),
                        ),
                        ("token_hash", models.CharField(max_length=64, unique=True)),
                        ("prefix", models.CharField(max_length=8)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="api_tokens",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "API token",
                        "verbose_name_plural": "API tokens",
                        "db_table": "jobs_apitoken",
                        "ordering": ["-created_at"],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_type_to("accounts", "jobs"), content_type_to("jobs", "accounts"), elidable=True
        ),
    ]
