"""Each usage sample's mean GPU %, as a column the database can average; the samples
already kept get it from their cards."""

from django.db import migrations, models


def fill(apps, schema_editor):
    AttemptSample = apps.get_model("jobs", "AttemptSample")
    batch = []
    for sample in AttemptSample.objects.exclude(gpus=[]).only("gpus").iterator(chunk_size=2000):
        utils = [card["util"] for card in sample.gpus]
        sample.gpu_util = round(sum(utils) / len(utils), 1)
        batch.append(sample)
        if len(batch) == 2000:
            AttemptSample.objects.bulk_update(batch, ["gpu_util"])
            batch = []
    AttemptSample.objects.bulk_update(batch, ["gpu_util"])


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0017_job_idle_cards"),
    ]

    operations = [
        migrations.AddField(
            model_name="attemptsample",
            name="gpu_util",
            field=models.FloatField(blank=True, null=True, verbose_name="mean GPU use (%)"),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
