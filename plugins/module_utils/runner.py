"""Run external tools the one way linerate modules do.

``Runner(module)(argv)`` maps ``argv[0]`` (a tool name) to the binary found
with ``module.get_bin_path`` (``/usr/sbin`` and ``/sbin`` included), runs it
as an argv list (never through a shell) with the locale pinned to C, and
returns ``(rc, stdout, stderr)``. A tool that is missing fails the module
with its name, unless it is listed in ``optional``: then ``OSError`` is
raised for the caller to handle.
"""

C_LOCALE = {"LANG": "C", "LC_ALL": "C"}
SBIN_DIRS = ["/usr/sbin", "/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"]


class Runner:
    def __init__(self, module, optional=()):
        self.module = module
        self.optional = set(optional)
        self.bins = {}

    def which(self, tool):
        if tool not in self.bins:
            self.bins[tool] = self.module.get_bin_path(tool, required=False, opt_dirs=SBIN_DIRS)
        return self.bins[tool]

    def __call__(self, argv):
        path = self.which(argv[0])
        if path is None:
            if argv[0] in self.optional:
                raise OSError(f"{argv[0]} not found")
            self.module.fail_json(msg=f"{argv[0]}: command not found (looked in PATH and "
                                      f"{', '.join(SBIN_DIRS)}); is its package installed?",
                                  cmd=argv)
        return self.module.run_command([path, *argv[1:]], environ_update=C_LOCALE)
