from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Platform core"

    def ready(self) -> None:
        from django.contrib.auth.models import User
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from core import audit, checks  # noqa: F401  # registers the deploy check

        post_save.connect(audit.on_save, dispatch_uid="core.audit.on_save")
        post_delete.connect(audit.on_delete, dispatch_uid="core.audit.on_delete")
        m2m_changed.connect(
            audit.join_the_only_workspace,
            sender=User.groups.through,
            dispatch_uid="core.audit.join_the_only_workspace",
        )
