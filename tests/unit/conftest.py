import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "lab", "ibsim"))
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as f:
        return f.read()


# The simulated node (labsim.Lab) for every unit test that names `lab` as a parameter: a fixture in the
# conftest, so test modules do not import it (an imported fixture that a parameter shadows is pyflakes'
# F811). A module that defines its own `lab` (test_verify_sim.py, checks/test_attribution.py) overrides it.
from labsim import lab  # noqa: E402,F401
