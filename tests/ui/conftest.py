"""The viewer's browser tests share one fixture: a module's Chromium, signed in to its `viewer`.

A module that uses `browser` defines its own module-scoped `viewer` (a `cairn ui` on the home it built);
test_home.py overrides `browser` to land on the home page at its own window size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.ui.helpers import Viewer, signed_in


@pytest.fixture(scope="module")
def browser(viewer: Viewer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with signed_in(viewer, tmp_path_factory.mktemp("chromium")) as driver:
        yield driver
