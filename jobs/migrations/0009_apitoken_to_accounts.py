"""ApiToken now belongs to the accounts app (its migration 0001), which keeps the
table ``jobs_apitoken`` and its rows: only jobs' state forgets the model."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("jobs", "0008_model_names"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ApiToken")],
            database_operations=[],
        ),
    ]
