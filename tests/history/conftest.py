"""The site tests' browser and SVG cache, for the history page's browser test."""

from tests.render.conftest import browser, svg_cache  # noqa: F401  (fixtures, registered by import)
