from django.apps import AppConfig


class WorkspaceConfig(AppConfig):
    """Role home pages and the demo loader: the top of the house.

    Dependencies run one way: workspace → metrics → annotation → chat → core → config. This app
    may import every app below it; nothing imports it back.
    """

    name = "workspace"
    verbose_name = "Workspace"
