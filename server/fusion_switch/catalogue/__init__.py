"""Rule and target catalogue (pure: no editor protocol here)."""

from .extra import CatalogueError, load_catalogue, load_extra_file
from .rules import OTHER_SECTION, SECTIONS, Catalogue, Rule, builtin_catalogue
from .targets import Target, known_target_names, resolve_target

__all__ = [
    "OTHER_SECTION",
    "SECTIONS",
    "Catalogue",
    "CatalogueError",
    "Rule",
    "Target",
    "builtin_catalogue",
    "known_target_names",
    "load_catalogue",
    "load_extra_file",
    "resolve_target",
]
