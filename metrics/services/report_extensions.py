"""Sections that apps above ``metrics`` add to a correlation report (the LLM judges' agreement
and bias tables), registered in their ``AppConfig.ready`` so that ``metrics`` never imports them.

An extension computes a JSON-ready section from the report's resolved configuration (or None when
it does not apply), lists the files it adds to the report's downloads, and names the template
the report page includes for it (with the section as ``section``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReportExtension:
    name: str
    compute: Callable[[Mapping[str, Any]], dict[str, Any] | None]
    files: Callable[[Mapping[str, Any]], dict[str, bytes]]
    template: str


_extensions: dict[str, ReportExtension] = {}


def register(extension: ReportExtension) -> None:
    _extensions[extension.name] = extension


def registered() -> list[ReportExtension]:
    return list(_extensions.values())


def compute_all(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    sections = {}
    for extension in registered():
        section = extension.compute(config)
        if section:
            sections[extension.name] = section
    return sections


def files_of(sections: Mapping[str, Mapping[str, Any]]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for name, section in sections.items():
        extension = _extensions.get(name)
        if extension is not None:
            files.update(extension.files(section))
    return files


def page_sections(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """(template, section) of each stored section whose extension is still registered."""
    out = []
    for name, section in (results.get("extensions") or {}).items():
        extension = _extensions.get(name)
        if extension is not None:
            out.append({"template": extension.template, "section": section, "name": name})
    return out
