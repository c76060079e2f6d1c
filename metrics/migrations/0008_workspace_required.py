"""The workspace column, filled by 0007_workspace, becomes required (its own migration: PostgreSQL
cannot alter a table with the fill's deferred constraint checks pending in one transaction)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("metrics", "0007_workspace")]

    operations = [
        migrations.AlterField(
            model_name="followupselection",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="core.workspace",
                verbose_name="工作区",
            ),
        ),
        migrations.AlterField(
            model_name="metricrun",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="core.workspace",
                verbose_name="工作区",
            ),
        ),
        migrations.AlterField(
            model_name="report",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="core.workspace",
                verbose_name="工作区",
            ),
        ),
        migrations.AlterField(
            model_name="traineddiscriminator",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="core.workspace",
                verbose_name="工作区",
            ),
        ),
    ]
