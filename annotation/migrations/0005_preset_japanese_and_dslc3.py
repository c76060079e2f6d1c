"""Japanese texts for the preset rubrics, and seed 004's two rubrics as presets.

A rubric version in use is immutable, and this keeps it so: on the stored version-1 presets it
only *adds* a missing `ja` text beside Chinese and English texts that are unchanged in the preset
file (a translation; questions, keys, scales and the other languages stay as they were). Seed
004's open-track and situation-track rubrics (`dslc3-open`, `dslc3-situation`) are created.
"""

from django.db import migrations


def _add_japanese(stored, shipped):
    """`stored` with the `ja` texts of `shipped` added where `stored` has the same texts without
    one; returns (new value, whether anything was added)."""
    if isinstance(stored, dict) and isinstance(shipped, dict):
        is_text = "zh-hans" in stored or "en" in stored
        if is_text:
            same = all(stored.get(k) == shipped.get(k) for k in ("zh-hans", "en"))
            if same and not stored.get("ja") and shipped.get("ja"):
                return {**stored, "ja": shipped["ja"]}, True
            return stored, False
        changed = False
        merged = dict(stored)
        for key, value in stored.items():
            if key in shipped:
                merged[key], added = _add_japanese(value, shipped[key])
                changed = changed or added
        return merged, changed
    if isinstance(stored, list) and isinstance(shipped, list) and len(stored) == len(shipped):
        merged_list, changed = [], False
        for a, b in zip(stored, shipped):
            value, added = _add_japanese(a, b)
            merged_list.append(value)
            changed = changed or added
        return merged_list, changed
    return stored, False


def forwards(apps, schema_editor):
    from annotation.presets import preset_specs

    Rubric = apps.get_model("annotation", "Rubric")
    for key, spec in preset_specs().items():
        version = spec.get("version", 1)
        rubric = Rubric.objects.filter(key=key, version=version, is_preset=True).first()
        if rubric is None:
            Rubric.objects.create(
                key=key, version=version, title=spec.get("title", {}), spec=spec, is_preset=True
            )
            continue
        new_spec, spec_changed = _add_japanese(rubric.spec, spec)
        new_title, title_changed = _add_japanese(rubric.title, spec.get("title", {}))
        if spec_changed or title_changed:
            rubric.spec, rubric.title = new_spec, new_title
            rubric.save(update_fields=["spec", "title"])


def backwards(apps, schema_editor):
    Rubric = apps.get_model("annotation", "Rubric")
    Rubric.objects.filter(key__in=["dslc3-open", "dslc3-situation"], is_preset=True).delete()


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_overall_key_reserved")]
    operations = [migrations.RunPython(forwards, backwards)]
