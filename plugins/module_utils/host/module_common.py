"""The one skeleton of the host modules: ``host_module(argument_spec, compute)``.

Every host module reads the host, plans the delta and acts only outside check mode (STYLE), so each
supports check mode; each runs its tools through one ``Runner``; each ends through
``common.exit_module`` (a ``ToolFailure`` fails the module with its message and fields, ``warnings``
become the module's warnings, the ``diff`` is returned only under --diff). What stays in a module
is its argument spec and its ``compute(module, run) -> result``, which checks the parameters first
(raising ``ToolFailure`` naming key, value and what is allowed) before any tool runs.

The switch modules have their own skeleton (``switch/module_common.py``): they reach a switch, not
the host they run on.
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.linerate.fabric.plugins.module_utils.common import exit_module
from ansible_collections.linerate.fabric.plugins.module_utils.runner import Runner


def host_module(argument_spec, compute, optional=(), **spec):
    """Run one host module: ``AnsibleModule(argument_spec, supports_check_mode=True, **spec)`` (``spec``:
    ``mutually_exclusive``, ``required_one_of``, ``required_if``), a ``Runner`` whose ``optional`` tools
    (a list, or a function of the module's parameters) raise ``OSError`` when missing instead of failing
    the module, and ``compute(module, run)``'s result as the module's end (``exit_module``)."""
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True, **spec)
    run = Runner(module, optional=optional(module.params) if callable(optional) else optional)
    exit_module(module, lambda: compute(module, run))
