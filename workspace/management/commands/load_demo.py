import os
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.urls import reverse

from workspace.demo import demo_load, demo_models_train


def default_base_url() -> str:
    """Where `make demo` serves the site: the Procfile's WEB_HOST/WEB_PORT (from the
    environment or .env, which settings load), so the printed invite link opens."""
    host = os.environ.get("WEB_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::"):  # listening on every interface: this machine answers locally
        host = "127.0.0.1"
    port = os.environ.get("WEB_PORT") or "8000"
    return f"http://{host}:{port}"


class Command(BaseCommand):
    help = (
        "Load the demo users, datasets, backends and campaign (idempotent) and print credentials."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--base-url", default=None, help="default: http://$WEB_HOST:$WEB_PORT (127.0.0.1:8000)"
        )

    def handle(self, *args: Any, base_url: str | None, **options: Any) -> None:
        base_url = (base_url or default_base_url()).rstrip("/")
        summary = demo_load()
        self.stdout.write(self.style.SUCCESS("Demo data ready."))
        self.stdout.write("Users (username / password / role):")
        for username, password, role in summary.users:
            self.stdout.write(f"  {username:<12} {password:<18} {role}")
        self.stdout.write("Datasets: " + ", ".join(f"{n} ({c})" for n, c in summary.datasets))
        self.stdout.write("Backends: " + ", ".join(summary.backends))
        if summary.campaign is not None:
            join = reverse("chat:campaign-join", args=[summary.campaign.invite_token])
            self.stdout.write(f"Crowdworker invite link: {base_url}{join}?worker_id=demo-worker-1")
        if summary.rated_study is not None:
            self.stdout.write(
                f"Rated study (simulated raters): 「{summary.rated_study.name}」 — start an MSDE-16"
                " metric run on it, then a correlation report (the home page links both)."
            )
        for directory in demo_models_train():
            self.stdout.write(
                f"Demo-quality vectors for the neural metrics (trained on the demo data, not for "
                f"published figures): {directory}"
            )
        if summary.japanese_campaign is not None:
            join = reverse("chat:campaign-join", args=[summary.japanese_campaign.invite_token])
            self.stdout.write(
                f"Japanese campaign invite link: {base_url}{join}?worker_id=demo-worker-ja-1"
            )
