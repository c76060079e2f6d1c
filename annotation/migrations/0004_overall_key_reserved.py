"""A question keyed ``overall`` is refused while the rubric has an overall score (the two were
written as one dimension twice). Stored rubrics with such a question keep their question keys,
which exports and imports name, and lose the colliding aggregate: ``"overall": "none"`` makes the
question itself the overall score, which is what its author asked raters for.
"""

from django.db import migrations


def release_overall_key(apps, schema_editor):
    Rubric = apps.get_model("annotation", "Rubric")
    for rubric in Rubric.objects.all():
        spec = rubric.spec if isinstance(rubric.spec, dict) else None
        if not spec or spec.get("overall", "mean") == "none":
            continue
        questions = spec.get("questions") or []
        if any(isinstance(q, dict) and q.get("key") == "overall" for q in questions):
            rubric.spec = {**spec, "overall": "none"}
            rubric.save(update_fields=["spec"])


class Migration(migrations.Migration):
    dependencies = [("annotation", "0003_review_jobs_quality_live")]
    operations = [migrations.RunPython(release_overall_key, migrations.RunPython.noop)]
