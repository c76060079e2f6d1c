from django.db import migrations, models

# Japanese names of MSDE's four skills (see 0002_skills).
SKILL_NAMES_JA = {
    "chitchat": "雑談",
    "knowledge": "知識対話",
    "recommendation": "対話型推薦",
    "persona": "ペルソナ対話",
}


def name_skills_in_japanese(apps, schema_editor):
    Skill = apps.get_model("chat", "Skill")
    for key, name in SKILL_NAMES_JA.items():
        Skill.objects.filter(key=key, name_ja="").update(name_ja=name)


class Migration(migrations.Migration):
    dependencies = [("chat", "0009_merge_20261124_0712")]

    operations = [
        migrations.AddField(
            model_name="skill",
            name="name_ja",
            field=models.CharField(blank=True, max_length=80),
        ),
        migrations.AddField(
            model_name="campaign",
            name="interface_language",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "由浏览器决定"),
                    ("zh-hans", "简体中文"),
                    ("en", "English"),
                    ("ja", "日本語"),
                ],
                default="",
                max_length=10,
            ),
        ),
        migrations.RunPython(name_skills_in_japanese, migrations.RunPython.noop),
    ]
