"""README.md's "Using it on a real cluster" block, read once for the tests that run it: the unit test
(tests/unit/test_readme_quickstart.py, its controller-only part) and the lab's (tests/integration/site/
test_quickstart.py, all of it)."""

import os
import re

REPO = os.path.dirname(os.path.abspath(__file__)).rsplit(os.sep, 1)[0]
SITE = "../mysite"  # the one name the tests substitute (the integration test: a temp directory)


def quickstart():
    """The commands of README.md's quickstart block, one string per line, comments dropped."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Using it on a real cluster\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)
    assert len(blocks) == 1, "README.md: one sh block in 'Using it on a real cluster'"
    lines = []
    for line in blocks[0].splitlines():
        code = line.split("  #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if code:
            lines.append(code)
    return blocks[0], lines
