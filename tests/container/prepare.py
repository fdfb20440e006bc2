"""Prepare the container stage's inputs before the bounded test run (run.sh calls it):
the Debian base image (mmdebstrap + podman import) and the host-built wheelhouse, both
cached, so the 6-minute bound covers building and running the image only."""

from __future__ import annotations

import sys
import time

import pytest


def main() -> int:
    from tests.container import test_image

    start = time.monotonic()
    try:
        test_image._skip_unless_podman_runs()
        test_image._base_image()
        house = test_image._wheelhouse()
    except pytest.skip.Exception as why:
        print(f"container stage: nothing to prepare ({why})")
        return 0
    print(f"container stage ready in {time.monotonic() - start:.0f} s: base "
          f"{test_image.BASE_IMAGE}, wheelhouse {house}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
