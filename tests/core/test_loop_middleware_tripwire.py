"""Tripwire: `core/loop_middleware.py` runs Django's (and django-csp's) middleware hooks on the
event loop, or sends them to a thread only when they will do I/O, and relies on how Django's
handler adapts `process_view` and parses a request body. That is only right for the code it was
checked against. A hash of each hook it replaces or relies on is kept here per version of the
package; an upgrade that changes one fails this test, so the override is read against the new
code (is the hook still free of I/O? does it still save only then?) before the hashes are
updated. An upgrade that changes none only needs its version added with the same hashes."""

# ruff: noqa: E501  (the table of hooks keeps one hook per line, names in full)

from __future__ import annotations

import hashlib
import importlib
import inspect
from importlib.metadata import version

import pytest

# package → version → "module:qualname" → sha256 of the hook's source (first 16 hex digits).
CHECKED: dict[str, dict[str, dict[str, str]]] = {
    "django": {
        "5.2.19": {
            "django.utils.deprecation:MiddlewareMixin.__init__": "cd0d3fd41f9408eb",
            "django.utils.deprecation:MiddlewareMixin.__call__": "337be048dd62e014",
            "django.utils.deprecation:MiddlewareMixin.__acall__": "adf8cbcaf9f11e45",
            "django.core.handlers.base:BaseHandler.load_middleware": "a1fb7ee5f8586195",
            "django.core.handlers.base:BaseHandler.adapt_method_mode": "1f6383b647ac2959",
            "django.http.request:HttpRequest._load_post_and_files": "651706c4c9ac1ede",
            "django.middleware.security:SecurityMiddleware.process_request": "3373d262748cbe3e",
            "django.middleware.security:SecurityMiddleware.process_response": "3822bd0d5f79f4a3",
            "django.contrib.sessions.middleware:SessionMiddleware.process_request": "6782d24847e4a926",
            "django.contrib.sessions.middleware:SessionMiddleware.process_response": "fbaf5503c20d7dd0",
            "django.middleware.locale:LocaleMiddleware.process_request": "d9d2626c77dcfe26",
            "django.middleware.locale:LocaleMiddleware.process_response": "fb2abee032d2e473",
            "django.middleware.common:CommonMiddleware.process_request": "993f4d1f2084e01e",
            "django.middleware.common:CommonMiddleware.process_response": "eb5ad294e9fbda9b",
            "django.middleware.csrf:CsrfViewMiddleware.process_request": "9aec8dfd81c88a56",
            "django.middleware.csrf:CsrfViewMiddleware.process_view": "cdbdabe04318fc2f",
            "django.middleware.csrf:CsrfViewMiddleware.process_response": "9fe1054c0f64b37f",
            "django.contrib.auth.middleware:AuthenticationMiddleware.process_request": "6dd39b90ad6373e2",
            "django.contrib.messages.middleware:MessageMiddleware.process_request": "7f4834ba26ee0583",
            "django.contrib.messages.middleware:MessageMiddleware.process_response": "04469c9493c90e26",
            "django.middleware.clickjacking:XFrameOptionsMiddleware.process_response": "045e5788270860c6",
        },
    },
    "django-csp": {
        "4.0": {
            "csp.middleware:CSPMiddleware.process_request": "bf5a743128a430b8",
            "csp.middleware:CSPMiddleware.process_response": "fa72a0cd0d633c49",
        },
    },
}


def source_hash(target: str) -> str:
    module, qualname = target.split(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return hashlib.sha256(inspect.getsource(obj).encode()).hexdigest()[:16]


def changed_hooks(package: str) -> list[str]:
    """The hooks whose source differs from what was checked for the installed version (every
    hook, when the installed version was never checked)."""
    installed = version(package)
    versions = CHECKED[package]
    reference = versions.get(installed) or next(iter(versions.values()))
    changed = [target for target, digest in reference.items() if source_hash(target) != digest]
    if installed not in versions:
        return [f"{package} {installed} not checked yet"] + changed
    return changed


@pytest.mark.parametrize("package", sorted(CHECKED))
def test_the_hooks_loop_middleware_overrides_are_the_ones_it_was_checked_against(package):
    changed = changed_hooks(package)
    current = {target: source_hash(target) for target in next(iter(CHECKED[package].values()))}
    assert not changed, (
        f"{package} changed hooks that core/loop_middleware.py overrides or relies on: {changed}. "
        "Read the override against the new code, then record the new version's hashes: "
        f"{current}"
    )


def test_the_tripwire_notices_a_changed_hook(monkeypatch):
    from django.middleware.csrf import CsrfViewMiddleware

    def process_view(self, request, callback, callback_args, callback_kwargs):
        return None  # a new version that, say, reads the session here

    monkeypatch.setattr(CsrfViewMiddleware, "process_view", process_view)
    assert changed_hooks("django") == ["django.middleware.csrf:CsrfViewMiddleware.process_view"]
